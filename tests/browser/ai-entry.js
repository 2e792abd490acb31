// What tests/browser/ai-sdk.test.mjs needs of the `ai` package, bundled by Vite for the test page.
export { generateText, streamText, generateObject, streamObject, stepCountIs, tool, jsonSchema, Output } from "ai";
