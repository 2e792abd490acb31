// Runs one agent task headlessly, in Node, with the built package (pkg/), a model bundle and the demo's
// tools (www/tools.js), and prints the transcript: each tool call with its arguments and result, the
// answer, and the speed. The model is served over http from the repository by tools/serve.mjs and loaded
// by the package's own loader, as a page would; Node has no WebGPU, so it runs on the CPU backend.
//   npm run ask -- "What's the weather in Paris?"
// The model is wisp-agent, or wisp-mini (the tiny fallback, which knows only the demo's tools) where
// wisp-agent's base is missing (tools/fetch-smollm2.sh gets it; the set-up runs it).
//   node tools/ask.mjs [--model <bundle manifest or .gguf, relative to the repo>] [--max-steps N] "question"
import { existsSync } from "node:fs";
import { parseArgs } from "node:util";
import { WISP_AGENT_BASE } from "../pkg-templates/models/wisp-agent.js";
import { serve } from "./serve.mjs";

const AGENT = "models/wisp-agent/manifest.json";
const FALLBACK = "models/wisp-mini/manifest.json";
const agentBase = new URL(`../models/wisp-agent/${WISP_AGENT_BASE.name}`, import.meta.url);

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    model: { type: "string" },
    "max-steps": { type: "string", default: "4" },
  },
});
const question = positionals.join(" ").trim();
if (!question) {
  console.error('usage: npm run ask -- "What\'s the weather in Paris?"  [--model path] [--max-steps N]');
  process.exit(2);
}

const modelPath = values.model ?? (existsSync(agentBase) ? AGENT : FALLBACK);
if (values.model === undefined && modelPath === FALLBACK) {
  console.error(`wisp-agent's base is missing (bash tools/fetch-smollm2.sh gets it): ${FALLBACK} runs instead`);
}

const server = await serve(0);
try {
  const { init, createAgent } = await import("../pkg/index.js");
  const { demoTools } = await import("../www/tools.js");
  // Node's fetch reads http but not file: URLs, so the wasm comes from the same server as the model.
  await init({ wasmUrl: `${server.url}/pkg/wisp_core_bg.wasm` });
  const url = `${server.url}/${modelPath}`;
  const source = url.endsWith(".json") ? { bundle: url } : url;
  // A GGUF file has no manifest to size the context; the demo's tools alone take about 550 tokens of it.
  const contextLen = url.endsWith(".json") ? undefined : 2048;
  const started = performance.now();
  const agent = await createAgent({ model: source, load: { cache: false, contextLen }, maxSteps: Number(values["max-steps"]) });
  for (const [spec, fn] of demoTools) agent.tool(spec, fn);
  console.log(`model: ${modelPath} (loaded in ${((performance.now() - started) / 1000).toFixed(1)} s)`);
  console.log(`user: ${question}`);
  let answer = "";
  for await (const ev of agent.stream(question)) {
    if (ev.type === "text") answer += ev.text;
    else if (ev.type === "tool_call") console.log(`tool call: ${ev.name}(${JSON.stringify(ev.arguments)})`);
    else if (ev.type === "tool_result") console.log(`tool result: ${JSON.stringify(ev.result)} (${ev.ms.toFixed(1)} ms)`);
    else if (ev.type === "tool_error") console.log(`tool error: ${ev.name ?? "?"}: ${ev.error}`);
    else if (ev.type === "step_end") {
      if (answer.trim()) console.log(`assistant: ${answer.trim()}`);
      answer = "";
    } else if (ev.type === "final") {
      const u = ev.usage;
      const seconds = u.totalMs / 1000;
      console.log(
        `done (${ev.finishReason}) in ${ev.steps} step(s): ${u.promptTokens} prompt tokens (${u.cachedTokens} reused), ` +
          `${u.completionTokens} generated in ${seconds.toFixed(2)} s, ${(u.completionTokens / seconds).toFixed(1)} tokens/s ` +
          `(prefill and tool time included)`,
      );
    }
  }
  agent.close();
} finally {
  await server.close();
}
