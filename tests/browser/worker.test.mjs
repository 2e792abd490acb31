// Worker mode: the model (and an agent's conversation) in a dedicated Web Worker behind the same API; the
// page keeps drawing frames while the worker loads and generates, and an AbortSignal crosses the boundary.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { openBrowser } from "./harness.mjs";

describe("worker mode in Chromium", () => {
  let browser;
  let ref;
  before(async () => {
    browser = await openBrowser();
    ref = JSON.parse(await readFile(new URL("../fixtures/decoders/llama.json", import.meta.url), "utf8"));
  });
  after(async () => {
    await browser?.close();
  });

  test("same answers as the page-side model, with the page's frames ticking", async (t) => {
    const c = ref.cases[0];
    const r = await browser.page.evaluate(async ({ prompt }) => {
      const { WorkerModel } = await import("/pkg/index.js");
      // Count animation frames and the longest gap between two while the worker works.
      let frames = 0;
      let last = performance.now();
      let longest = 0;
      let ticking = true;
      const tick = (now) => {
        frames++;
        longest = Math.max(longest, now - last);
        last = now;
        if (ticking) requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
      const started = performance.now();
      const bytes = new Uint8Array(await (await fetch("/tests/fixtures/decoders/llama.safetensors")).arrayBuffer());
      const tokenizer = new Uint8Array(await (await fetch("/tests/fixtures/decoders/bytes.tokenizer.json")).arrayBuffer());
      const config = await (await fetch("/tests/fixtures/decoders/llama.config.json")).text();
      const events = [];
      const model = await WorkerModel.load({ weights: bytes, tokenizer, config }, { chunkLen: 4, contextLen: 32, backend: "webgpu", onProgress: (e) => events.push(e.phase) });
      const out = { transferred: bytes.byteLength === 0, events: [...new Set(events)] };
      out.greedy = await model.generate(prompt, { maxTokens: 10 });
      const deltas = [];
      const stream = model.stream(prompt, { maxTokens: 10 });
      for await (const d of stream) deltas.push(d.text);
      out.streamed = deltas.join("") === (await stream.result).text;
      const controller = new AbortController();
      try {
        await model.generate(prompt, { maxTokens: 20, signal: controller.signal, onText: () => controller.abort() });
        out.aborted = "finished";
      } catch (e) {
        out.aborted = e.name;
      }
      out.after = (await model.generate(prompt, { maxTokens: 2 })).tokens;
      out.encodeError = await model.encode("x").then(() => "ok", (e) => e.code);
      out.elapsed = performance.now() - started;
      ticking = false;
      out.frames = frames;
      out.longestGap = longest;
      model.close();
      out.closed = await model.length().then(() => "answered", (e) => e.code);
      return out;
    }, { prompt: c.tokens.slice(0, 6) });
    t.diagnostic(`${r.frames} frames in ${r.elapsed.toFixed(0)} ms, longest gap ${r.longestGap.toFixed(0)} ms`);
    assert.equal(r.transferred, true, "model bytes are transferred, not copied");
    assert.deepEqual(r.events, ["build", "ready"]);
    assert.deepEqual(r.greedy.tokens, c.greedy_from_6);
    assert.equal(r.streamed, true);
    assert.equal(r.aborted, "AbortError");
    assert.deepEqual(r.after, c.greedy_from_6.slice(0, 2));
    assert.equal(r.encodeError, "ok");
    assert.equal(r.closed, "SESSION_CLOSED");
    // The page's main thread never stalled: frames kept coming throughout.
    assert.ok(r.frames >= r.elapsed / 100, `${r.frames} frames in ${r.elapsed} ms`);
    assert.ok(r.longestGap < 500, `longest gap between frames ${r.longestGap} ms`);
  });

  test("an agent in worker mode: the model in the worker, the tools on the page, frames ticking", async (t) => {
    const r = await browser.page.evaluate(async () => {
      const { createAgent } = await import("/pkg/index.js");
      let frames = 0;
      let last = performance.now();
      let longest = 0;
      let ticking = true;
      const tick = (now) => {
        frames++;
        longest = Math.max(longest, now - last);
        last = now;
        if (ticking) requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
      const started = performance.now();
      const agent = await createAgent({ model: { bundle: "/models/wisp-mini/manifest.json" }, worker: true, system: "You are a helpful assistant." });
      const weather = {
        name: "get_weather",
        description: "Get the current weather for a city.",
        parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      };
      // `document` exists only on the page: the tool says where it ran.
      agent.tool(weather, ({ city }) => ({ city, temperature_c: 18, condition: "sunny", ranOn: typeof document === "object" ? "page" : "worker" }));
      const events = [];
      const result = await agent.run("What's the weather in Paris?", { onEvent: (e) => events.push(e) });
      const out = { events, result, messages: (await agent.messages).map((m) => m.role) };
      const controller = new AbortController();
      out.aborted = await agent
        .run("What's the weather in London?", { signal: controller.signal, onEvent: (e) => e.type === "step_start" && controller.abort() })
        .then(() => "finished", (e) => e.name);
      out.afterAbort = (await agent.run("What's the weather in Tokyo?", { maxSteps: 1 })).steps;
      agent.tool({ name: "bad", parameters: { type: "array" } }, () => null);
      out.badTool = await agent.run("hello").then(() => "ran", (e) => e.code);
      out.elapsed = performance.now() - started;
      ticking = false;
      out.frames = frames;
      out.longestGap = longest;
      agent.close();
      return out;
    });
    const types = r.events.map((e) => e.type);
    t.diagnostic(`${r.frames} frames in ${r.elapsed.toFixed(0)} ms, longest gap ${r.longestGap.toFixed(0)} ms; answer: ${r.result.text}`);
    const call = r.events.find((e) => e.type === "tool_call");
    assert.ok(call, `a tool call among ${types}`);
    assert.equal(call.name, "get_weather");
    assert.equal(typeof call.arguments.city, "string");
    const outcome = r.events.find((e) => e.type === "tool_result" && e.id === call.id);
    assert.equal(outcome.result.ranOn, "page");
    assert.equal(types.at(-1), "final");
    assert.ok(r.result.steps >= 2, "the answer came after the tool result");
    assert.deepEqual(r.messages.slice(0, 3), ["system", "user", "assistant"]);
    assert.ok(r.messages.includes("tool"));
    assert.equal(r.aborted, "AbortError");
    assert.equal(r.afterAbort, 1, "the agent runs again after an abort");
    assert.equal(r.badTool, "INVALID_TOOL");
    assert.ok(r.frames >= r.elapsed / 100, `${r.frames} frames in ${r.elapsed} ms`);
    assert.ok(r.longestGap < 500, `longest gap between frames ${r.longestGap} ms`);
  });
});
