// The Vercel AI SDK (`ai`, from the repository's node_modules) and wisp-agent's provider, bundled by Vite
// for tests/browser/ai-sdk.test.mjs, which drives them through window.sdk.
import { generateObject, generateText, jsonSchema, Output, stepCountIs, streamText, tool } from "ai";
import { Model, WorkerModel } from "wisp-agent";
import { wisp } from "wisp-agent/ai-sdk";

window.sdk = { generateObject, generateText, jsonSchema, Output, stepCountIs, streamText, tool, Model, WorkerModel, wisp };
window.ready = true;
