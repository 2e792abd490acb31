// The bundled model as the demo runs it: createAgent with the demo tools of www/tools.js (real functions
// over local data), greedy, on the CPU backend. Each prompt must get the right call with the exact
// arguments, the tool's real result, and an answer that states that result; one task needs two steps
// (the weather, then a unit conversion of its temperature). The prompts are worded unlike the training
// templates (tools/train/gen_data.py) and name cities the demo tools know.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { openBrowser } from "./harness.mjs";

const CASES = [
  { prompt: "What's the weather like in Tokyo right now?", calls: [["get_weather", { city: "Tokyo" }]], answer: ["22", "cloudy"] },
  { prompt: "How is the weather in New York?", calls: [["get_weather", { city: "New York" }]], answer: ["15", "windy"] },
  { prompt: "Could you tell me the local time in Sydney?", calls: [["get_time", { city: "Sydney" }]], answer: [] },
  { prompt: "What is 12 * (3 + 4)?", calls: [["calculate", { expression: "12 * (3 + 4)" }]], answer: ["84"] },
  { prompt: "Convert 5 km to miles, please.", calls: [["convert_units", { value: 5, from: "km", to: "miles" }]], answer: ["3.10686"] },
  { prompt: "Add a note: call Anna at 5pm", calls: [["add_note", { text: "call Anna at 5pm" }]], answer: ["call Anna at 5pm"] },
  { prompt: "Which notes have I saved?", calls: [["list_notes", {}]], answer: ["call Anna at 5pm"] },
  {
    prompt: "What's the temperature in Berlin in fahrenheit?",
    calls: [["get_weather", { city: "Berlin" }], ["convert_units", { value: 10, from: "celsius", to: "fahrenheit" }]],
    answer: ["50"],
  },
];

describe("the bundled model with the demo tools", () => {
  let browser;
  let results;
  before(async () => {
    browser = await openBrowser({ webgpu: false });
    results = await browser.page.evaluate(async (cases) => {
      const { createAgent } = await import("/pkg/index.js");
      const { demoTools } = await import("/www/tools.js");
      const agent = await createAgent({ model: { bundle: "/models/wisp-mini/manifest.json" }, system: "You are a helpful assistant.", load: { cache: false, backend: "cpu" } });
      for (const [spec, fn] of demoTools) agent.tool(spec, fn);
      const out = [];
      for (const c of cases) {
        agent.reset();
        const events = [];
        const result = await agent.run(c.prompt, { onEvent: (e) => events.push(e) });
        out.push({ events: events.filter((e) => e.type.startsWith("tool")), text: result.text, finishReason: result.finishReason, usage: result.usage });
      }
      agent.close();
      return out;
    }, CASES);
  });
  after(async () => {
    await browser?.close();
  });

  CASES.forEach((c, i) => {
    test(c.prompt, (t) => {
      const r = results[i];
      t.diagnostic(`${JSON.stringify(r.events.map((e) => [e.type, e.name, e.arguments ?? e.result ?? e.error]))} -> ${JSON.stringify(r.text)} (${r.usage.completionTokens} tokens)`);
      const calls = r.events.filter((e) => e.type === "tool_call").map((e) => [e.name, e.arguments]);
      assert.deepEqual(calls, c.calls);
      const outcomes = r.events.filter((e) => e.type === "tool_result" || e.type === "tool_error");
      assert.deepEqual(outcomes.map((e) => e.type), c.calls.map(() => "tool_result"), "every call succeeded");
      assert.equal(r.finishReason, "eos_token");
      const expected = c.answer.length ? c.answer : [outcomes[0].result.time];
      for (const s of expected) assert.ok(r.text.includes(s), `the answer states ${s}`);
    });
  });
});
