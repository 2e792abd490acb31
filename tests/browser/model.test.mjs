// The decoder graph in Chromium (WebGPU on SwiftShader here) through the built package: logits of tiny
// random-weight models of each family against onnxruntime (tools/make_decoder_fixtures.py), bundle
// loading with hashes and the Cache API, and the coded errors of loading and running.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { openBrowser } from "./harness.mjs";

const FIX = "/tests/fixtures/decoders";
const reference = async (family) =>
  JSON.parse(await readFile(new URL(`../fixtures/decoders/${family}.json`, import.meta.url), "utf8"));

// Loads `source` in the page, runs the token lists, returns each run's logits as plain arrays.
async function runModel(page, source, runs, options = {}) {
  return page.evaluate(
    async ({ source, runs, options }) => {
      const { Model } = await import("/pkg/index.js");
      const events = [];
      const model = await Model.load(source, { ...options, onProgress: (e) => events.push(e.phase) });
      const backend = model.backend;
      const vocab = model.config.vocabSize;
      const out = [];
      for (const run of runs) {
        if (run.seek !== undefined) model.seek(run.seek);
        const flat = await model.forward(run.tokens);
        const rows = [];
        for (let i = 0; i < run.tokens.length; i++) rows.push([...flat.subarray(i * vocab, (i + 1) * vocab)]);
        out.push(rows);
      }
      const length = model.length;
      model.close();
      return { out, events, length, backend };
    },
    { source, runs, options },
  );
}

function assertClose(rows, want, from, what) {
  rows.forEach((row, i) => {
    const ref = want.logits[from + i];
    const diff = row.reduce((m, v, j) => Math.max(m, Math.abs(v - ref[j])), 0);
    assert.ok(diff <= 1e-4, `${what}: position ${from + i} max abs diff ${diff}`);
    const argmax = row.reduce((b, v, j) => (v > row[b] ? j : b), 0);
    assert.equal(argmax, want.argmax[from + i], `${what}: greedy token at ${from + i}`);
  });
}

describe("decoder models in Chromium", () => {
  let browser;
  before(async () => {
    browser = await openBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  for (const [family, backend] of ["llama", "qwen2", "qwen3"].flatMap((f) => [[f, "webgpu"], [f, "cpu"]])) {
    test(`${family} on ${backend}: chunked prefill and one-token steps match onnxruntime`, async () => {
      const ref = await reference(family);
      const [a, b] = ref.cases;
      const source =
        family === "llama"
          ? { bundle: `${FIX}/llama.manifest.json` }
          : { weights: `${FIX}/${family}.safetensors`, config: await readFile(new URL(`../fixtures/decoders/${family}.config.json`, import.meta.url), "utf8") };
      const steps = b.tokens.slice(4).map((t) => ({ tokens: [t] }));
      const { out, events, length, backend: used } = await runModel(
        browser.page,
        source,
        [{ tokens: a.tokens }, { seek: 0, tokens: b.tokens.slice(0, 4) }, ...steps],
        { contextLen: 32, chunkLen: 4, backend },
      );
      assertClose(out[0], a, 0, "prefill");
      assertClose(out[1], b, 0, "second sequence");
      out.slice(2).forEach((rows, i) => assertClose(rows, b, 4 + i, "decode"));
      assert.equal(length, b.tokens.length);
      assert.equal(used.kind, backend);
      assert.deepEqual([...new Set(events)], ["download", "build", "ready"]);
    });
  }

  test("auto picks the CPU on a software WebGPU adapter, and says why", async () => {
    const backend = await browser.page.evaluate(async () => {
      const { Model } = await import("/pkg/index.js");
      const model = await Model.load({ bundle: "/tests/fixtures/decoders/llama.manifest.json" }, { cache: false });
      const b = model.backend;
      model.close();
      return b;
    });
    assert.deepEqual(backend, { kind: "cpu", reason: "auto: the WebGPU adapter is a software fallback, slower than the CPU kernels", threads: 1, simd: "relaxed" });
  });

  test("a second load works with the network blocked, from the Cache API", async () => {
    const { page } = browser;
    await runModel(page, { bundle: `${FIX}/llama.manifest.json` }, [], { contextLen: 32 });
    await page.route("**/tests/fixtures/decoders/**", (route) => route.abort("internetdisconnected"));
    try {
      const ref = await reference("llama");
      const { out } = await runModel(page, { bundle: `${FIX}/llama.manifest.json` }, [{ tokens: ref.cases[0].tokens.slice(0, 4) }], { contextLen: 32 });
      assertClose(out[0], ref.cases[0], 0, "from cache");
      const failed = await page.evaluate(async () => {
        const { Model } = await import("/pkg/index.js");
        return Model.load({ bundle: "/tests/fixtures/decoders/llama.manifest.json" }, { cache: false }).then(
          () => "loaded",
          (e) => e.code,
        );
      });
      assert.equal(failed, "FETCH_FAILED");
    } finally {
      await page.unroute("**/tests/fixtures/decoders/**");
    }
  });

  test("bad bundles, files and requests are refused with codes, and the model stays usable", async () => {
    const { page } = browser;
    const manifest = JSON.parse(await readFile(new URL("../fixtures/decoders/llama.manifest.json", import.meta.url), "utf8"));
    const wrongHash = structuredClone(manifest);
    wrongHash.files.weights.sha256 = "0".repeat(64);
    const extraField = { ...manifest, colour: "blue" };
    await page.route("**/decoders/wrong-hash.json", (r) => r.fulfill({ json: wrongHash }));
    await page.route("**/decoders/extra-field.json", (r) => r.fulfill({ json: extraField }));
    await page.route("**/bad/truncated.safetensors", async (r) => {
      const body = await readFile(new URL("../fixtures/decoders/llama.safetensors", import.meta.url));
      await r.fulfill({ body: body.subarray(0, 1000), headers: { "content-type": "application/octet-stream" } });
    });
    // A server that promises more bytes than it sends, then hangs up: a download cut short.
    const short = createServer((req, res) => {
      res.writeHead(200, { "content-length": "5000", "access-control-allow-origin": "*" });
      res.write(Buffer.alloc(1000));
      setTimeout(() => res.destroy(), 50);
    });
    await new Promise((resolve) => short.listen(0, "127.0.0.1", resolve));
    const shortUrl = `http://127.0.0.1:${short.address().port}/model.gguf`;
    const results = await page.evaluate(async ({ fix, shortUrl }) => {
      const { Model } = await import("/pkg/index.js");
      const attempt = (p) => p.then(() => "resolved", (e) => ({ code: e.code, message: e.message }));
      const opts = { cache: false, contextLen: 8, chunkLen: 4, backend: "webgpu" };
      const r = {
        wrongHash: await attempt(Model.load({ bundle: `${fix}/wrong-hash.json` }, opts)),
        extraField: await attempt(Model.load({ bundle: `${fix}/extra-field.json` }, opts)),
        missing: await attempt(Model.load(`${fix}/nope.gguf`, opts)),
        notAModel: await attempt(Model.load(new TextEncoder().encode("hello, I am not a model"), opts)),
        truncated: await attempt(Model.load({ weights: `${fix}/bad/truncated.safetensors`, config: { model_type: "llama" } }, opts)),
        noConfig: await attempt(Model.load({ weights: `${fix}/llama.safetensors` }, opts)),
        badOption: await attempt(Model.load({ bundle: `${fix}/llama.manifest.json` }, { ...opts, chunkLen: 3 })),
        badBackend: await attempt(Model.load({ bundle: `${fix}/llama.manifest.json` }, { ...opts, backend: "tpu" })),
        cutShort: await attempt(Model.load(shortUrl, opts)),
        // A context of 4M tokens: the attention scores of one chunk outgrow a GPU buffer.
        tooLarge: await attempt(Model.load({ bundle: `${fix}/llama.manifest.json` }, { ...opts, contextLen: 1 << 22 })),
      };
      const model = await Model.load({ bundle: `${fix}/llama.manifest.json` }, opts);
      const first = model.forward([1, 2, 3, 4, 5, 6]);
      r.busy = await attempt(model.forward([7]));
      await first;
      r.overflow = await attempt(model.forward([7, 8, 9]));
      r.badToken = await attempt(model.forward([100000]));
      r.noTokenizer = (() => {
        try {
          model.encode("hi");
          return "encoded";
        } catch (e) {
          return e.code;
        }
      })();
      r.lengthAfter = model.length;
      r.stillRuns = (await model.forward([7, 8])).length;
      model.close();
      return r;
    }, { fix: FIX, shortUrl });
    short.close();
    assert.equal(results.wrongHash.code, "HASH_MISMATCH");
    assert.match(results.wrongHash.message, /expected 0{64}/);
    assert.equal(results.extraField.code, "INVALID_MANIFEST");
    assert.match(results.extraField.message, /unknown field `colour`/);
    assert.equal(results.missing.code, "FETCH_FAILED");
    assert.equal(results.notAModel.code, "INVALID_WEIGHTS");
    assert.equal(results.truncated.code, "INVALID_WEIGHTS");
    assert.equal(results.noConfig.code, "INVALID_MODEL");
    assert.match(results.noConfig.message, /config\.json/);
    assert.equal(results.badOption.code, "INVALID_REQUEST");
    assert.match(results.badOption.message, /chunk_len is 3/);
    assert.equal(results.badBackend.code, "INVALID_REQUEST");
    assert.equal(results.cutShort.code, "FETCH_TRUNCATED", JSON.stringify(results.cutShort));
    assert.match(results.cutShort.message, /after 1000 of 5000 bytes/);
    assert.equal(results.tooLarge.code, "MODEL_TOO_LARGE", JSON.stringify(results.tooLarge));
    assert.match(results.tooLarge.message, /the attention mask and scores needs 256\.0 MiB in one GPU buffer; the GPU device's maxStorageBufferBindingSize is 128\.0 MiB/);
    assert.equal(results.busy.code, "BUSY");
    assert.equal(results.overflow.code, "CONTEXT_OVERFLOW");
    assert.equal(results.badToken.code, "INVALID_INPUT");
    assert.equal(results.noTokenizer, "INVALID_MODEL");
    assert.equal(results.lengthAfter, 6);
    assert.equal(results.stillRuns, 2 * 256);
  });
});
