// The bundled default model (models/wisp-mini) loaded from its bundle through the package in Chromium:
// the same prompt, tokens, logits and greedy continuation as PyTorch (tools/train/golden.py) on both
// backends, and the agent loop around it with the demo tools (the right call, its result, an answer that
// states it).
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { openBrowser } from "./harness.mjs";

describe("bundled model in Chromium", () => {
  let browser;
  let golden;
  before(async () => {
    browser = await openBrowser();
    golden = JSON.parse(await readFile(new URL("../fixtures/bundled/golden.json", import.meta.url), "utf8"));
  });
  after(async () => {
    await browser?.close();
  });

  for (const backend of ["cpu", "webgpu"]) {
    test(`${backend}: the demo prompt renders, tokenizes, and decodes as in PyTorch`, async (t) => {
      const c = golden.cases.find((x) => x.name === "tool_call");
      const r = await browser.page.evaluate(async ({ messages, tools, backend, steps }) => {
        const { Model } = await import("/pkg/index.js");
        let t0 = performance.now();
        const model = await Model.load({ bundle: "/models/wisp-mini/manifest.json" }, { chunkLen: 8, contextLen: 640, cache: false, backend });
        const loadMs = performance.now() - t0;
        const prompt = model.renderChat(messages, { tools });
        const ids = [...model.encode(prompt)];
        const vocab = model.config.vocabSize;
        t0 = performance.now();
        const logits = await model.forward(ids);
        const prefillMs = performance.now() - t0;
        const last = logits.subarray((ids.length - 1) * vocab);
        const argmax = (row) => row.reduce((b, v, j) => (v > row[b] ? j : b), 0);
        const out = [argmax(last)];
        t0 = performance.now();
        while (out.length < steps) out.push(argmax(await model.forward([out.at(-1)])));
        const decodeMs = (performance.now() - t0) / (steps - 1);
        model.close();
        return { prompt, ids, last: [...last], out, loadMs, prefillMs, decodeMs };
      }, { messages: c.messages, tools: c.tools, backend, steps: backend === "cpu" ? 32 : 8 });
      t.diagnostic(`load ${r.loadMs.toFixed(0)} ms; prefill ${r.ids.length} tokens ${(r.prefillMs / r.ids.length).toFixed(1)} ms/token; decode ${r.decodeMs.toFixed(1)} ms/token`);
      assert.equal(r.prompt, c.prompt);
      assert.deepEqual(r.ids, c.token_ids);
      const diff = r.last.reduce((m, v, i) => Math.max(m, Math.abs(v - c.last_logits[i])), 0);
      assert.ok(diff <= 1e-4, `max abs logit diff ${diff}`);
      assert.deepEqual(r.out, c.greedy_ids.slice(0, r.out.length));
    });
  }

  test("the agent runs the model's calls through the demo tools, errors included", async (t) => {
    const r = await browser.page.evaluate(async () => {
      const { createAgent } = await import("/pkg/index.js");
      const { demoTools } = await import("/www/tools.js");
      const agent = await createAgent({ model: { bundle: "/models/wisp-mini/manifest.json" }, system: "You are a helpful assistant.", maxSteps: 2, load: { cache: false } });
      for (const [spec, fn] of demoTools) agent.tool(spec, fn);
      const events = [];
      const result = await agent.run("What's the weather in Paris?", { onEvent: (e) => events.push(e) });
      const messages = agent.messages;
      agent.close();
      return { events, result, messages };
    });
    const types = r.events.map((e) => e.type);
    t.diagnostic(JSON.stringify(r.events.filter((e) => e.type.startsWith("tool"))));
    assert.equal(types[0], "step_start");
    const call = r.events.find((e) => e.type === "tool_call");
    assert.equal(call.name, "get_weather");
    assert.deepEqual(call.arguments, { city: "Paris" });
    const outcome = r.events.find((e) => e.type === "tool_result" && e.id === call.id);
    assert.deepEqual(outcome.result, { city: "Paris", temperature_c: 18, condition: "sunny" });
    const toolMessage = r.messages.find((m) => m.role === "tool" && m.tool_call_id === call.id);
    assert.ok(toolMessage, "the outcome is in the conversation as a tool message");
    assert.equal(types.at(-1), "final");
    assert.equal(r.result.finishReason, "eos_token");
    assert.match(r.result.text, /18/);
    assert.match(r.result.text, /sunny/);
    assert.ok(r.messages.every((m) => m.role !== "system" || m.content === "You are a helpful assistant."), "tool output never becomes system text");
  });
});
