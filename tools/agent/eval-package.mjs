// The package's own figures on the held-out cases: the built package (pkg/) in Node, CPU backend, the
// agent's tool-call grammar, greedy, through the OpenAI surface (which runs one model message, as the
// agent's step loop does). Writes {"id", "output"} lines for score.py, calls written back as Hermes tags.
//   node tools/agent/eval-package.mjs [--model models/wisp-agent/manifest.json] [--cases FILE] [--out FILE] [--limit N]
import { createWriteStream, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { serve } from "../serve.mjs";

const { values } = parseArgs({
  options: {
    model: { type: "string", default: "models/wisp-agent/manifest.json" },
    base: { type: "string" },
    cases: { type: "string", default: "tools/agent/out/eval.jsonl" },
    out: { type: "string", default: "tools/agent/out/outputs-package.jsonl" },
    limit: { type: "string", default: "0" },
  },
});
let cases = readFileSync(values.cases, "utf8").trim().split("\n").map((l) => JSON.parse(l));
const limit = Number(values.limit);
if (limit) cases = cases.filter((_, i) => i % Math.max(1, Math.floor(cases.length / limit)) === 0);

// OpenAI's shapes: every call gets an id, and each tool message names the call it answers, in order.
function openai(messages) {
  let n = 0;
  const pending = [];
  return messages.map((m) => {
    if (m.role === "assistant" && m.tool_calls) {
      const tool_calls = m.tool_calls.map((c) => {
        const id = `call_${n++}`;
        pending.push(id);
        return { id, type: "function", function: c.function };
      });
      return { role: "assistant", content: m.content ?? null, tool_calls };
    }
    if (m.role === "tool") return { role: "tool", tool_call_id: pending.shift(), content: m.content };
    return m;
  });
}

const server = await serve(0);
const out = createWriteStream(values.out);
try {
  const { init, Model, createChatCompletions } = await import("../../pkg/index.js");
  await init({ wasmUrl: `${server.url}/pkg/wisp_core_bg.wasm` });
  const options = { cache: false };
  if (values.base) options.baseWeightsUrl = `${server.url}/${values.base}`;
  const model = await Model.load({ bundle: `${server.url}/${values.model}` }, options);
  const api = createChatCompletions(model);
  const started = performance.now();
  for (const [i, c] of cases.entries()) {
    const r = await api.create({ messages: openai(c.messages), tools: c.tools, temperature: 0, max_tokens: 160 });
    const msg = r.choices[0].message;
    const calls = (msg.tool_calls ?? []).map(
      (t) => `<tool_call>\n{"name": ${JSON.stringify(t.function.name)}, "arguments": ${t.function.arguments}}\n</tool_call>`,
    );
    const output = [msg.content ?? "", ...calls].filter(Boolean).join("\n");
    out.write(JSON.stringify({ id: c.id, output }) + "\n");
    if (i % 20 === 0) console.log(`${i}/${cases.length} ${((performance.now() - started) / 1000).toFixed(0)} s ${c.id}: ${output.slice(0, 100)}`);
  }
  model.close?.();
} finally {
  out.end();
  await server.close();
}
console.log(`-> ${values.out}`);
