// Constrained tool calls through the package in Chromium: the bundled model (undertrained, often wrong on
// its own) with `toolChoice`, on 60 varied prompts and several tool sets; every call it makes reaches the
// page as a valid `tool_call` (never an `invalid` tool_error), and `"none"` makes none.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { openBrowser } from "./harness.mjs";

describe("constrained tool calls in Chromium", () => {
  let browser;
  before(async () => {
    browser = await openBrowser({ webgpu: false });
  });
  after(async () => {
    await browser?.close();
  });

  test("the bundled model's calls are schema-valid on 60 prompts", async (t) => {
    const r = await browser.page.evaluate(async () => {
      const { createAgent } = await import("/pkg/index.js");
      const agent = await createAgent({ model: { bundle: "/models/wisp-mini/manifest.json" }, maxSteps: 1, maxTokens: 160, load: { cache: false, backend: "cpu" } });
      const seen = [];
      const tools = [
        [{ name: "get_weather", description: "Current weather for a city.", parameters: { type: "object", properties: { city: { type: "string", maxLength: 40 }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } }, required: ["city"], additionalProperties: false } }],
        [{ name: "convert_units", description: "Convert a value between units.", parameters: { type: "object", properties: { value: { type: "number" }, from: { type: "string", enum: ["km", "mi", "kg", "lb", "C", "F"] }, to: { type: "string", enum: ["km", "mi", "kg", "lb", "C", "F"] } }, required: ["value", "from", "to"], additionalProperties: false } }],
        [{ name: "set_alarm", description: "Set an alarm.", parameters: { type: "object", properties: { hour: { type: "integer", minimum: 0, maximum: 23 }, minute: { type: "integer", minimum: 0, maximum: 59 }, label: { type: "string", maxLength: 30 } }, required: ["hour", "minute"], additionalProperties: false } }],
        [{ name: "add_note", description: "Save a note.", parameters: { type: "object", properties: { text: { type: "string", maxLength: 60 }, tags: { type: "array", items: { type: "string", maxLength: 12 }, maxItems: 3 }, meta: { type: "object", properties: { pinned: { type: "boolean" } }, required: ["pinned"], additionalProperties: false } }, required: ["text", "meta"], additionalProperties: false } }],
      ];
      for (const [spec] of tools) agent.tool(spec, async (args) => (seen.push([spec.name, args]), "ok"));
      const subjects = ["Paris", "Tokyo", "5 km in miles", "100 F in C", "7:30", "a meeting at noon", "buy milk", "the gym at 6", "Lima", "2 lb in kg"];
      const asks = ["What is", "Please handle", "Can you do", "I need", "Quick:", "Tell me about"];
      const events = [];
      const t0 = performance.now();
      let forced = 0;
      let completion = 0;
      for (let i = 0; i < 60; i++) {
        const prompt = `${asks[i % asks.length]} ${subjects[i % subjects.length]}`;
        const toolChoice = i % 3 === 2 ? { type: "function", function: { name: tools[i % tools.length][0].name } } : "required";
        agent.reset();
        const result = await agent.run(prompt, { toolChoice, temperature: 0.8, seed: i, onEvent: (e) => events.push({ i, ...e }) });
        forced += result.usage.forcedTokens;
        completion += result.usage.completionTokens;
      }
      agent.reset();
      const none = await agent.run("What's the weather in Paris?", { toolChoice: "none", maxTokens: 40 });
      const ms = performance.now() - t0;
      agent.close();
      return { events, seen, none, ms, forced, completion };
    });
    const calls = r.events.filter((e) => e.type === "tool_call");
    const invalid = r.events.filter((e) => e.type === "tool_error" && e.invalid);
    t.diagnostic(`${calls.length} valid calls in 60 runs, ${invalid.length} invalid; ${r.forced} of ${r.completion} tokens forced; ${(r.ms / 61).toFixed(0)} ms per run`);
    // A call cut by the token budget is the one failure a grammar cannot prevent: it must not happen here.
    assert.deepEqual(invalid, []);
    const runsWithCall = new Set(calls.map((e) => e.i));
    assert.equal(runsWithCall.size, 60);
    assert.equal(r.seen.length, calls.length);
    assert.equal(r.none.toolCalls.length, 0);
  });
});
