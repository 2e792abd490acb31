// The context budget (#21): one agent asked question after question without reset() keeps working. The
// bundled model (1,024 tokens of context) with the demo tools: 200 runs in one conversation, each calling
// the right tool, memory flat, the history trimmed by whole exchanges while the cached system message and
// tools stay cached; the "error" policy, a page's callback (and its mistakes), a message that cannot fit,
// contextUsage, worker mode and the OpenAI surface.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { memoryMeter, openBrowser } from "./harness.mjs";

const MINI = "/models/wisp-mini/manifest.json";
const SYSTEM = "You are a helpful assistant.";
// Prompts the bundled model answers with one call (tests/browser/agent-demo.test.mjs).
const QUESTIONS = [
  ["What's the weather like in Tokyo right now?", "get_weather", { city: "Tokyo" }],
  ["Could you tell me the local time in Sydney?", "get_time", { city: "Sydney" }],
  ["What is 12 * (3 + 4)?", "calculate", { expression: "12 * (3 + 4)" }],
  ["Convert 5 km to miles, please.", "convert_units", { value: 5, from: "km", to: "miles" }],
  ["How is the weather in New York?", "get_weather", { city: "New York" }],
];

describe("context budget", () => {
  let browser;
  before(async () => {
    browser = await openBrowser({ webgpu: false });
    await browser.page.evaluate(
      async ({ MINI, SYSTEM }) => {
        const { Model } = await import("/pkg/index.js");
        window.model = await Model.load({ bundle: MINI }, { backend: "cpu", cache: false });
        window.unhandled = [];
        addEventListener("unhandledrejection", (e) => window.unhandled.push(String(e.reason?.message ?? e.reason)));
        window.newAgent = async (options = {}) => {
          const { createAgent } = await import("/pkg/index.js");
          const { demoTools } = await import("/www/tools.js");
          // The bundled model learnt from conversations of one or two requests; past about four earlier
          // exchanges it starts to miss calls, so its history is held to 320 tokens (about three).
          const agent = await createAgent({ model: window.model, system: SYSTEM, maxTokens: 48, maxHistoryTokens: 320, ...options });
          for (const [spec, fn] of demoTools) agent.tool(spec, fn);
          return agent;
        };
      },
      { MINI, SYSTEM },
    );
  });
  after(async () => {
    await browser?.close();
  });

  test("200 runs in one conversation: no error, the right tool each time, memory flat, the prefix cached", async (t) => {
    const { page } = browser;
    const measure = await memoryMeter(browser);
    await page.evaluate(async (QUESTIONS) => {
      const { init } = await import("/pkg/index.js");
      const wasm = await init();
      const agent = await window.newAgent();
      const fixed = agent.contextUsage().systemAndTools;
      const log = { wrong: [], trims: 0, trimmedMessages: 0, ran: 0, full: 0, cachedBelowFixed: [], usage: [], firstMessages: [] };
      window.soak = {
        memory: () => wasm.memory.buffer.byteLength,
        log: () => ({ ...log, fixed }),
        async run(from, to) {
          for (let i = from; i < to; i++) {
            const [prompt, name, args] = QUESTIONS[i % QUESTIONS.length];
            let trimmed = null;
            const events = [];
            const r = await agent.run(prompt, { onEvent: (e) => events.push(e) });
            for (const e of events) {
              if (e.type === "context_trimmed") {
                trimmed = e;
                log.trims++;
                log.trimmedMessages += e.messages;
                if (log.trims === 1) log.firstTrim = e;
              } else if (e.type === "step_end" && trimmed?.step === e.step) {
                // The step right after a cut: what ran, against what a full rerun would run.
                log.ran += e.usage.promptTokens - e.usage.cachedTokens;
                log.full += e.usage.promptTokens;
                if (e.usage.cachedTokens < fixed) log.cachedBelowFixed.push(e.usage.cachedTokens);
              }
            }
            const calls = r.toolCalls.map((c) => [c.name, c.arguments]);
            if (JSON.stringify(calls) !== JSON.stringify([[name, args]]) || r.toolCalls.some((c) => c.error)) log.wrong.push({ i, calls, text: r.text });
            const u = agent.contextUsage();
            if (u.systemAndTools + u.history + u.free !== u.capacity || u.systemAndTools !== fixed) log.usage.push({ i, u });
            const m = agent.messages;
            if (trimmed) log.firstMessages.push([m[0].role, m[0].content === window.SYSTEM_TEXT, m[1].role].join());
          }
        },
      };
    }, QUESTIONS);
    await page.evaluate((s) => (window.SYSTEM_TEXT = s), SYSTEM);
    const started = Date.now();
    await page.evaluate(() => window.soak.run(0, 20));
    const start = await measure();
    await page.evaluate(() => window.soak.run(20, 200));
    const end = await measure();
    const seconds = (Date.now() - started) / 1000;
    const log = await page.evaluate(() => window.soak.log());
    const mib = (b) => (b / 2 ** 20).toFixed(2);
    t.diagnostic(
      `200 runs in ${seconds.toFixed(1)} s; ${log.trims} trims (${log.trimmedMessages} messages); after a trim ${log.ran} of ${log.full} prompt tokens ran ` +
        `(system + tools: ${log.fixed} tokens cached); after 20: wasm ${mib(start.wasm)} MiB, JS heap ${mib(start.heap)} MiB; after 200: wasm ${mib(end.wasm)} MiB, JS heap ${mib(end.heap)} MiB`,
    );
    assert.deepEqual(log.wrong, [], "every run called the right tool with the right arguments");
    assert.ok(log.trims >= 10, `${log.trims} trims`);
    assert.deepEqual(log.firstTrim && Object.keys(log.firstTrim).sort(), ["messages", "policy", "shortened", "step", "tokens", "type"]);
    assert.equal(log.firstTrim.policy, "trim");
    assert.equal(log.firstTrim.step, 1, "the history is cut before the run's first message");
    assert.ok(log.firstTrim.messages >= 4 && log.firstTrim.messages % 4 === 0, `whole exchanges of four messages: ${log.firstTrim.messages}`);
    assert.ok(log.firstTrim.tokens > 0);
    assert.deepEqual(log.cachedBelowFixed, [], "the system message and the tools stayed cached across every cut");
    assert.ok(log.ran <= log.full - log.trims * log.fixed, `${log.ran} of ${log.full} tokens ran after cuts`);
    assert.deepEqual(log.usage, [], "contextUsage adds up to the context");
    assert.ok(log.firstMessages.every((m) => m === "system,true,user"), "after a cut the system message comes first, then a user message");
    // The 2 MiB the wasm heap may take: a tool result, a prompt and its tokens several times over (the
    // conversation itself is bounded by the context: about 1,024 tokens, a few KB).
    assert.ok(end.wasm - start.wasm <= 2 * 2 ** 20, `wasm memory grew by ${end.wasm - start.wasm} bytes`);
    // The JS heap: the same run's objects are freed; 1 MiB, as the hardening soak allows.
    assert.ok(end.heap - start.heap < 2 ** 20, `the JS heap grew by ${end.heap - start.heap} bytes`);
    assert.deepEqual(await page.evaluate(() => window.unhandled), []);
  });

  test('"error" keeps today\'s behaviour: CONTEXT_OVERFLOW, and the failed run is undone', async () => {
    const r = await browser.page.evaluate(async (QUESTIONS) => {
      const agent = await window.newAgent({ contextPolicy: "error" });
      for (let i = 0; i < 40; i++) {
        const count = agent.messages.length;
        try {
          await agent.run(QUESTIONS[i % QUESTIONS.length][0]);
        } catch (e) {
          const out = { code: e.code, i, same: agent.messages.length === count };
          agent.close();
          return out;
        }
      }
      return null;
    }, QUESTIONS);
    assert.ok(r, "the conversation overflowed");
    assert.equal(r.code, "CONTEXT_OVERFLOW");
    assert.ok(r.i > 3, `overflowed at run ${r.i}`);
    assert.ok(r.same, "the failed run left no message behind");
  });

  test("a page's callback chooses what to keep (here: a summary), and its mistakes are CONTEXT_POLICY", async () => {
    const r = await browser.page.evaluate(async (QUESTIONS) => {
      const seen = [];
      let mode = "summary";
      const policy = (messages, info) => {
        seen.push({ count: messages.length, info });
        if (mode === "not an array") return "nope";
        if (mode === "drop current") return messages.slice(0, 1);
        if (mode === "throw") throw new Error("no summary today");
        const current = messages.findLastIndex((m) => m.role === "user");
        const earlier = messages.slice(0, current).filter((m) => m.role === "user").length;
        const summary = { role: "assistant", content: `Earlier I answered ${earlier} questions.` };
        return [messages[0], summary, ...messages.slice(current)];
      };
      const agent = await window.newAgent({ contextPolicy: policy, maxHistoryTokens: undefined });
      const out = { events: [], calls: [], errors: {} };
      for (let i = 0; i < 16; i++) {
        const [prompt] = QUESTIONS[i % QUESTIONS.length];
        const res = await agent.run(prompt, { onEvent: (e) => e.type === "context_trimmed" && out.events.push(e) });
        out.calls.push(res.toolCalls.map((c) => c.name).join());
      }
      out.after = agent.messages.slice(0, 2);
      // Now make the next run need a cut, then break the callback each way.
      mode = "summary";
      while (agent.contextUsage().free > 150) await agent.run(QUESTIONS[0][0]);
      const big = "Please look up the weather in Tokyo for me, and tell me how warm it is there today. ".repeat(6);
      for (const m of ["not an array", "drop current", "throw"]) {
        mode = m;
        const before = JSON.stringify(agent.messages);
        try {
          await agent.run(big);
          out.errors[m] = "resolved";
        } catch (e) {
          out.errors[m] = [e.code, JSON.stringify(agent.messages) === before];
        }
      }
      // The callback cuts the history, but the message is too long anyway: the run is undone, cut included.
      mode = "summary";
      const before = JSON.stringify(agent.messages);
      try {
        await agent.run("tell me about the weather in every city you know ".repeat(200));
        out.errors.huge = "resolved";
      } catch (e) {
        out.errors.huge = [e.code, JSON.stringify(agent.messages) === before];
      }
      out.seen = seen;
      agent.close();
      return out;
    }, QUESTIONS);
    assert.ok(r.events.length >= 1, "the callback was used");
    for (const e of r.events) {
      assert.equal(e.policy, "callback");
      assert.ok(e.tokens > 0 && e.messages > 0, JSON.stringify(e));
    }
    const info = r.seen[0].info;
    assert.deepEqual(Object.keys(info).sort(), ["capacity", "fits", "free", "history", "reserve", "systemAndTools"]);
    assert.equal(info.fits, false);
    assert.equal(info.capacity, 1024);
    assert.equal(r.after[0].role, "system");
    assert.match(r.after[1].content, /^Earlier I answered \d+ questions\.$/);
    QUESTIONS.forEach(([, name], i) => assert.equal(r.calls[i], name));
    for (const m of ["not an array", "drop current", "throw"]) assert.deepEqual(r.errors[m], ["CONTEXT_POLICY", true], m);
    assert.deepEqual(r.errors.huge, ["CONTEXT_OVERFLOW", true], "a cut followed by an overflow is undone");
  });

  test("a message that cannot fit with the tools is CONTEXT_OVERFLOW before anything runs; the history stays", async () => {
    const r = await browser.page.evaluate(async () => {
      const agent = await window.newAgent();
      await agent.run("What's the weather like in Tokyo right now?");
      const before = JSON.stringify(agent.messages);
      const events = [];
      let toolRan = false;
      agent.tool({ name: "spy", description: "never called", parameters: { type: "object", properties: {} } }, () => (toolRan = true));
      const huge = "tell me about the weather in every city you know ".repeat(200);
      try {
        await agent.run(huge, { onEvent: (e) => events.push(e.type) });
        return "resolved";
      } catch (e) {
        const out = { code: e.code, message: e.message, events, toolRan, same: JSON.stringify(agent.messages) === before };
        agent.close();
        return out;
      }
    });
    assert.equal(r.code, "CONTEXT_OVERFLOW", r.message ?? r);
    assert.match(r.message, /only the current message/);
    assert.deepEqual(r.events, ["step_start"], "no token ran, nothing was trimmed");
    assert.equal(r.toolRan, false);
    assert.ok(r.same, "the history was not cut for a message that cannot fit anyway");
  });

  test("worker mode trims the same way", async (t) => {
    const r = await browser.page.evaluate(async (QUESTIONS) => {
      const { createAgent } = await import("/pkg/index.js");
      const { demoTools } = await import("/www/tools.js");
      const agent = await createAgent({ model: { bundle: "/models/wisp-mini/manifest.json" }, worker: true, load: { backend: "cpu", cache: false }, system: "You are a helpful assistant.", maxTokens: 48, maxHistoryTokens: 320 });
      for (const [spec, fn] of demoTools) agent.tool(spec, fn);
      const out = { trims: [], wrong: [] };
      for (let i = 0; i < 25; i++) {
        const [prompt, name] = QUESTIONS[i % QUESTIONS.length];
        const res = await agent.run(prompt, { onEvent: (e) => e.type === "context_trimmed" && out.trims.push(e) });
        if (res.toolCalls.map((c) => c.name).join() !== name) out.wrong.push(i);
      }
      out.usage = await agent.contextUsage();
      out.first = (await agent.messages)[1].role;
      agent.close();
      return out;
    }, QUESTIONS);
    t.diagnostic(`${r.trims.length} trims; usage ${JSON.stringify(r.usage)}`);
    assert.ok(r.trims.length >= 1);
    assert.deepEqual(r.wrong, []);
    assert.equal(r.usage.systemAndTools + r.usage.history + r.usage.free, 1024);
    assert.equal(r.first, "user");
  });

  test("the OpenAI surface trims a long request, or refuses it with contextPolicy \"error\"", async () => {
    const r = await browser.page.evaluate(async () => {
      const { createChatCompletions } = await import("/pkg/index.js");
      const { demoTools } = await import("/www/tools.js");
      const tools = demoTools.map(([spec]) => ({ type: "function", function: spec }));
      const messages = [{ role: "system", content: "You are a helpful assistant." }];
      for (let i = 0; i < 20; i++) {
        messages.push({ role: "user", content: "What's the weather like in Tokyo right now?" });
        messages.push({ role: "assistant", content: null, tool_calls: [{ id: `call_${i}`, type: "function", function: { name: "get_weather", arguments: '{"city": "Tokyo"}' } }] });
        messages.push({ role: "tool", tool_call_id: `call_${i}`, content: '{"city": "Tokyo", "temperature_c": 22, "condition": "cloudy"}' });
        messages.push({ role: "assistant", content: "It is 22 °C and cloudy in Tokyo." });
      }
      messages.push({ role: "user", content: "Convert 5 km to miles, please." });
      const request = { model: "wisp", messages, tools, temperature: 0, max_tokens: 48 };
      const done = await createChatCompletions(window.model).create(request);
      let refused;
      try {
        await createChatCompletions(window.model, { contextPolicy: "error" }).create(request);
      } catch (e) {
        refused = e.code;
      }
      let chunks = 0;
      let trimmed;
      for await (const c of await createChatCompletions(window.model).create({ ...request, stream: true })) {
        chunks++;
        if (c.usage) trimmed = c.usage.context_trimmed;
      }
      return { finish: done.choices[0].finish_reason, trimmed: done.usage.context_trimmed, refused, streamTrimmed: trimmed, chunks };
    });
    assert.ok(["tool_calls", "stop"].includes(r.finish), r.finish);
    assert.ok(r.trimmed?.messages >= 4, JSON.stringify(r.trimmed));
    assert.equal(r.refused, "CONTEXT_OVERFLOW");
    assert.deepEqual(r.streamTrimmed, r.trimmed);
  });
});
