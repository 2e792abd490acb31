// Worker mode: the model in a dedicated Web Worker behind the same API; the page keeps drawing frames
// while the worker loads and generates, and an AbortSignal crosses the boundary.
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
});
