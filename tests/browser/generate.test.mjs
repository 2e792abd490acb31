// Generation through the package in Chromium, on the tiny Llama fixture with a byte-level tokenizer:
// greedy output equals onnxruntime's, streaming deltas add up to the result, abort and early exit leave
// the model usable, and seeded sampling is reproducible.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { openBrowser } from "./harness.mjs";

describe("generation in Chromium", () => {
  let browser;
  let ref;
  before(async () => {
    browser = await openBrowser();
    ref = JSON.parse(await readFile(new URL("../fixtures/decoders/llama.json", import.meta.url), "utf8"));
  });
  after(async () => {
    await browser?.close();
  });

  test("greedy, streamed, aborted, cancelled and seeded generations", async () => {
    const c = ref.cases[0];
    const r = await browser.page.evaluate(async ({ prompt }) => {
      const { Model } = await import("/pkg/index.js");
      const model = await Model.load({ bundle: "/tests/fixtures/decoders/llama-bytes.manifest.json" }, { chunkLen: 4, cache: false, backend: "webgpu" });
      const out = {};
      model.resetProfile();
      out.greedy = await model.generate(prompt, { maxTokens: 10 });
      out.profile = model.profile();
      out.decoded = model.decode(out.greedy.tokens);
      out.plain = await model.generate(prompt, { maxTokens: 10, draftTokens: 0 });
      // Repeated text gives prompt lookup something to copy.
      const repeated = [...prompt, ...prompt, ...prompt];
      out.repeatedPlain = await model.generate(repeated, { maxTokens: 12, draftTokens: 0 });
      out.repeatedDrafted = await model.generate(repeated, { maxTokens: 12 });

      const stream = model.stream(prompt, { maxTokens: 10 });
      const deltas = [];
      for await (const d of stream) deltas.push(d.text);
      out.streamed = { joined: deltas.join(""), result: await stream.result };

      const controller = new AbortController();
      let seen = 0;
      try {
        for await (const _ of model.stream(prompt, { maxTokens: 10, signal: controller.signal })) {
          if (++seen === 2) controller.abort();
        }
        out.aborted = "finished";
      } catch (e) {
        out.aborted = e.name;
      }
      out.lengthAfterAbort = model.length;
      out.afterAbort = await model.generate(prompt, { maxTokens: 3 });

      const early = model.stream(prompt, { maxTokens: 10 });
      for await (const _ of early) break;
      out.early = (await early.result).finishReason;

      const sample = (seed) => model.generate(prompt, { maxTokens: 8, temperature: 1.5, seed }).then((x) => x.tokens);
      out.seeded = [await sample(7), await sample(7), await sample(8)];

      const interleaved = model.stream(prompt, { maxTokens: 10 });
      try {
        for await (const _ of interleaved) await model.forward([1]);
        out.interleaved = "finished";
      } catch (e) {
        out.interleaved = e.code;
      }
      try {
        await model.generate(prompt, { maxTokens: 4, temperature: -1 });
      } catch (e) {
        out.badTemperature = e.code;
      }
      model.close();
      return out;
    }, { prompt: c.tokens.slice(0, 6) });

    assert.deepEqual(r.greedy.tokens, c.greedy_from_6);
    assert.equal(r.greedy.finishReason, "length");
    assert.equal(r.greedy.text, r.decoded);
    assert.deepEqual(
      [r.greedy.usage.promptTokens, r.greedy.usage.cachedTokens, r.greedy.usage.completionTokens],
      [6, 0, 10],
    );
    assert.ok(r.greedy.usage.ttftMs > 0 && r.greedy.usage.tokensPerSecond > 0);
    // Drafts (on by default) change the number of passes, never the tokens.
    assert.deepEqual(r.plain.tokens, c.greedy_from_6);
    assert.deepEqual([r.plain.usage.draftTokens, r.plain.usage.passes], [0, 10]);
    assert.deepEqual(r.repeatedDrafted.tokens, r.repeatedPlain.tokens);
    const u = r.repeatedDrafted.usage;
    assert.ok(u.acceptedDraftTokens > 0, JSON.stringify(u));
    assert.equal(u.passes, 12 - u.acceptedDraftTokens);
    for (const stage of ["inputs", "wonnx_run", "cache_write", "logits_copy", "sampling", "detokenize_stop"]) {
      assert.ok(r.profile.stages[stage]?.calls > 0, `profile stage ${stage}: ${JSON.stringify(r.profile)}`);
    }
    assert.deepEqual([r.profile.tokensRun >= 15, r.profile.tokensSampled], [true, 10]);
    assert.equal(r.streamed.joined, r.streamed.result.text);
    assert.deepEqual(r.streamed.result.tokens, c.greedy_from_6);
    assert.equal(r.streamed.result.usage.cachedTokens, 5);
    assert.equal(r.aborted, "AbortError");
    assert.ok(r.lengthAfterAbort >= 6 && r.lengthAfterAbort < 16, `cache after abort: ${r.lengthAfterAbort}`);
    assert.deepEqual(r.afterAbort.tokens, c.greedy_from_6.slice(0, 3));
    assert.equal(r.early, "cancelled");
    assert.deepEqual(r.seeded[0], r.seeded[1]);
    assert.notDeepEqual(r.seeded[0], r.seeded[2]);
    assert.equal(r.interleaved, "BUSY");
    assert.equal(r.badTemperature, "INVALID_REQUEST");
  });
});
