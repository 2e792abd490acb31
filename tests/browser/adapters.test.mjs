// LoRA adapters in Chromium, against llama.cpp: the f32 fixture Llama plus a random rank-4 adapter
// (tools/make_lora_fixtures.py) loaded by URL, by bytes and from a bundle manifest's files.adapters, on the
// CPU backend (main module and the threaded one on 2 threads in a worker) and on WebGPU (the adapter
// merged into the graph's f32 weights). Flawed adapters and options are refused with their codes, and the
// page loads the next model as if nothing happened.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { before, describe, test } from "node:test";
import { browserFor } from "./harness.mjs";

const DIR = "/tests/fixtures/decoders";
// As tests/lora.rs: llama.cpp rounds activations to f16 for the adapter's f16 tensors (up to 7e-4 here).
const TOLERANCE = 2e-3;

let reference;
before(async () => {
  reference = JSON.parse(await readFile(new URL("../fixtures/decoders/llama-lora.json", import.meta.url), "utf8"));
});

// In `page`: each case's logits, loading `source` with `options` (worker: a WorkerModel).
function run(page, source, options, { worker = false } = {}) {
  return page.evaluate(
    async ({ source, options, cases, worker }) => {
      const { init, Model, WorkerModel } = await import("/pkg/index.js");
      if (worker) await import("/pkg/threads.js");
      else await init();
      if (options.adapterBytes) {
        options.adapters = [{ bytes: new Uint8Array(await (await fetch(options.adapterBytes)).arrayBuffer()) }];
        delete options.adapterBytes;
      }
      const model = await (worker ? WorkerModel : Model).load(source, { contextLen: 64, cache: false, ...options });
      const vocab = model.config.vocabSize;
      const out = [];
      for (const tokens of cases) {
        await model.seek(0);
        const flat = await model.forward(tokens);
        out.push(Array.from({ length: tokens.length }, (_, i) => [...flat.subarray(i * vocab, (i + 1) * vocab)]));
      }
      const backend = model.backend.kind;
      model.close();
      return { out, backend };
    },
    { source, options, cases: reference.cases.map((c) => c.tokens), worker },
  );
}

// Every row within TOLERANCE of llama.cpp's, with its greedy token; returns the largest difference.
function worst({ out }, what) {
  let worst = 0;
  out.forEach((rows, c) =>
    rows.forEach((row, i) => {
      const ref = reference.cases[c].logits[i];
      worst = Math.max(worst, row.reduce((m, v, j) => Math.max(m, Math.abs(v - ref[j])), 0));
      const argmax = row.reduce((b, v, j) => (v > row[b] ? j : b), 0);
      assert.equal(argmax, reference.cases[c].argmax[i], `${what}, case ${c}: greedy token at ${i}`);
    }),
  );
  assert.ok(worst <= TOLERANCE, `${what}: ${worst} from llama.cpp`);
  return worst;
}

const weights = { weights: `${DIR}/llama.safetensors`, config: JSON.parse(await readFile(new URL("../fixtures/decoders/llama.config.json", import.meta.url), "utf8")) };
const adapter = `${DIR}/llama.lora.gguf`;

describe("LoRA adapters in a page", () => {
  const browser = browserFor({ webgpu: true });

  test("CPU backend: by URL, by bytes and from a manifest, llama.cpp's logits", async (t) => {
    const byUrl = await run(browser.page, weights, { backend: "cpu", adapters: [{ url: adapter, scale: 1 }] });
    t.diagnostic(`by URL: ${worst(byUrl, "by URL")} from llama.cpp`);
    const byBytes = await run(browser.page, weights, { backend: "cpu", adapterBytes: adapter });
    assert.deepEqual(byBytes.out, byUrl.out);
    const bundle = await run(browser.page, { bundle: `${DIR}/llama-lora.manifest.json` }, { backend: "cpu" });
    assert.deepEqual(bundle.out, byUrl.out);
    // The base served elsewhere (here: as bytes), the adapter from the manifest; sha256 still checked.
    const based = await browser.page.evaluate(async (dir) => {
      const { Model } = await import("/pkg/index.js");
      const base = new Uint8Array(await (await fetch(`${dir}/llama.safetensors`)).arrayBuffer());
      const good = await Model.load({ bundle: `${dir}/llama-lora.manifest.json` }, { backend: "cpu", cache: false, baseWeights: base });
      good.close();
      base[base.length - 1] ^= 1;
      return Model.load({ bundle: `${dir}/llama-lora.manifest.json` }, { backend: "cpu", cache: false, baseWeights: base }).then(
        () => "loaded",
        (e) => e.code,
      );
    }, DIR);
    assert.equal(based, "HASH_MISMATCH");
  });

  test("WebGPU backend: the adapter merged into the graph's weights", async (t) => {
    const r = await run(browser.page, weights, { backend: "webgpu", adapters: [{ url: adapter }] });
    assert.equal(r.backend, "webgpu");
    t.diagnostic(`WebGPU: ${worst(r, "WebGPU")} from llama.cpp`);
  });

  test("flawed adapters and options are refused by code; the next load works", async () => {
    const codes = await browser.page.evaluate(
      async ({ dir, weights }) => {
        const { Model } = await import("/pkg/index.js");
        const code = (p) => p.then(() => "loaded", (e) => `${e.code}: ${e.message}`);
        const load = (options) => Model.load(weights, { backend: "cpu", cache: false, ...options });
        const out = {};
        for (const bad of ["other-arch", "missing-half", "wrong-shape", "no-such-weight", "bad-alpha"]) {
          out[bad] = await code(load({ adapters: [{ url: `${dir}/bad-adapters/${bad}.gguf` }] }));
        }
        out.notAnArray = await code(load({ adapters: { url: "x" } }));
        out.both = await code(load({ adapters: [{ url: "x", bytes: new Uint8Array(4) }] }));
        out.scale = await code(load({ adapters: [{ url: "x", scale: Infinity }] }));
        out.unknown = await code(load({ adapters: [{ url: "x", weight: 1 }] }));
        out.baseWithoutBundle = await code(load({ baseWeights: "x" }));
        const bundle = (files, options = {}) =>
          code(Model.load({ bundle: `${dir}/llama-lora.manifest.json`, files }, { backend: "cpu", cache: false, ...options }));
        out.strayFile = await bundle({ "llama.safetensors": `${dir}/llama.safetensors`, "other.bin": "x" });
        out.filesNotAMap = await bundle(["llama.safetensors"]);
        out.filesAndBase = await bundle({ "llama.safetensors": "x" }, { baseWeights: "x" });
        const ok = await load({ adapters: [{ url: `${dir}/llama.lora.gguf` }] });
        out.after = ok.config.numLayers;
        ok.close();
        return out;
      },
      { dir: DIR, weights },
    );
    for (const bad of ["other-arch", "missing-half", "wrong-shape", "no-such-weight", "bad-alpha"]) {
      assert.match(codes[bad], /^INVALID_ADAPTER: /, bad);
    }
    assert.match(codes["no-such-weight"], /blk\.9\.attn_q\.weight\.lora_a/);
    assert.match(codes.strayFile, /other\.bin/);
    for (const bad of ["notAnArray", "both", "scale", "unknown", "baseWithoutBundle", "strayFile", "filesNotAMap", "filesAndBase"]) {
      assert.match(codes[bad], /^INVALID_REQUEST: /, bad);
    }
    assert.equal(codes.after, 2);
  });
});

describe("LoRA adapters on the threaded module", () => {
  const browser = browserFor({ webgpu: false, isolated: true });

  test("2 threads in a worker, the adapter by a page-relative URL: llama.cpp's logits", async (t) => {
    const r = await run(
      browser.page,
      weights,
      // Relative to the page (/tests/browser/blank.html), not to the worker's script.
      { backend: "cpu", threads: 2, adapters: [{ url: "../fixtures/decoders/llama.lora.gguf" }] },
      { worker: true },
    );
    t.diagnostic(`2 threads: ${worst(r, "2 threads")} from llama.cpp`);
    // A bundle whose adapter was moved (`files`), both by page-relative URLs: the worker resolves neither
    // against its own script.
    const moved = await run(
      browser.page,
      { bundle: "../fixtures/decoders/llama-lora.manifest.json", files: { "llama.lora.gguf": "../fixtures/decoders/llama.lora.gguf" } },
      { backend: "cpu", threads: 2 },
      { worker: true },
    );
    assert.deepEqual(moved.out, r.out);
  });
});
