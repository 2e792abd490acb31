// The quantized kernels that ship, through a whole model in Chromium: two tiny Llama GGUFs whose weights are
// Q8_0, Q4_0, Q4_1, Q4_K, Q5_0, IQ4_NL and IQ4_XS (llama-quant, F16 embeddings) and Q5_1, Q5_K, Q6_K, Q3_K
// and Q2_K (llama-quant-k) on the CPU backend, against the f32 model of their weights as the Python `gguf`
// package dequantizes them, run by onnxruntime (tools/make_quant_fixtures.py). Each
// module the package ships runs it: the plain-SIMD and relaxed-SIMD main modules in a page, and the
// threaded module on 1 and 2 threads in a worker of a cross-origin isolated page. Activations are rounded
// to i16 per block of 32 before the integer products, hence a tolerance: a share of each
// row's spread, as in tests/cpu_decoder.rs.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { before, describe, test } from "node:test";
import { browserFor } from "./harness.mjs";

const MODELS = ["llama-quant", "llama-quant-k"];
// Over 10x the worst error measured natively (0.0007 of the spread); a wrong block layout or scale is of order 1.
const TOLERANCE = 0.01;

const references = {};
before(async () => {
  for (const name of MODELS) {
    references[name] = JSON.parse(await readFile(new URL(`../fixtures/decoders/${name}.json`, import.meta.url), "utf8"));
  }
});

// In `page`: every case's logits of model `name` from one pass and from one-token steps, and the backend
// it ran on.
function runCases(page, name, { relaxedSimd = true, worker = false, threads = 1 } = {}) {
  return page.evaluate(
    async ({ weights, cases, relaxedSimd, worker, threads }) => {
      const { init, Model, WorkerModel } = await import("/pkg/index.js");
      if (!worker) await init({ relaxedSimd });
      else await import("/pkg/threads.js");
      const options = { backend: "cpu", contextLen: 64, cache: false, threads };
      const model = worker ? await WorkerModel.load({ weights }, options) : await Model.load({ weights }, options);
      const vocab = model.config.vocabSize;
      const rows = (flat, n) => Array.from({ length: n }, (_, i) => [...flat.subarray(i * vocab, (i + 1) * vocab)]);
      const out = [];
      for (const tokens of cases) {
        await model.seek(0);
        const pass = rows(await model.forward(tokens), tokens.length);
        await model.seek(0);
        const steps = [];
        for (const t of tokens) steps.push(...rows(await model.forward([t]), 1));
        out.push({ pass, steps });
      }
      const backend = model.backend;
      model.close();
      return { out, backend };
    },
    {
      weights: `/tests/fixtures/decoders/${name}.gguf`,
      cases: references[name].cases.map((c) => c.tokens),
      relaxedSimd,
      worker,
      threads,
    },
  ).then((r) => ({ ...r, name }));
}

// Every row within the tolerance of the reference, one pass equal to the steps bit for bit, and the
// greedy token where the reference's top two are further apart than the error. Returns the worst share.
function check({ out, name }, what) {
  const reference = references[name];
  what = `${name}, ${what}`;
  let worst = 0;
  out.forEach(({ pass, steps }, c) => {
    const want = reference.cases[c];
    pass.forEach((row, i) => {
      assert.deepEqual(row, steps[i], `${what}, case ${c}, position ${i}: one pass and one-token steps differ`);
      const ref = want.logits[i];
      const spread = Math.max(...ref) - Math.min(...ref);
      const diff = row.reduce((m, v, j) => Math.max(m, Math.abs(v - ref[j])), 0);
      worst = Math.max(worst, diff / spread);
      assert.ok(diff / spread <= TOLERANCE, `${what}, case ${c}, position ${i}: max abs diff ${diff} is ${(diff / spread).toFixed(4)} of the spread`);
      const [first, second] = [...ref].sort((a, b) => b - a);
      if (first - second > 2 * diff) {
        const argmax = row.reduce((b, v, j) => (v > row[b] ? j : b), 0);
        assert.equal(argmax, want.argmax[i], `${what}, case ${c}: greedy token at ${i}`);
      }
    });
  });
  // Dequantized f32 weights would agree to about 1e-6: the error shows the integer kernels ran.
  assert.ok(worst > 1e-4, `${what}: worst error ${worst} is that of f32 weights`);
  return worst;
}

describe("quantized weights through the CPU backend in Chromium", () => {
  const browser = browserFor({ webgpu: false });

  for (const relaxedSimd of [true, false]) {
    test(`main module, ${relaxedSimd ? "relaxed SIMD" : "plain SIMD"}: every kept type matches the dequantized reference`, async (t) => {
      // A page per module: `init` picks the module once per realm.
      const page = await browser.context.newPage();
      try {
        await page.goto(`${browser.url}/tests/browser/blank.html`);
        for (const name of MODELS) {
          const r = await runCases(page, name, { relaxedSimd });
          assert.deepEqual(r.backend, { kind: "cpu", reason: "asked for", threads: 1, simd: relaxedSimd ? "relaxed" : "simd128" });
          t.diagnostic(`${name}: worst error ${check(r, r.backend.simd).toFixed(4)} of the spread`);
        }
      } finally {
        await page.close();
      }
    });
  }
});

describe("a GGUF file stays in JavaScript's memory", () => {
  const browser = browserFor({ webgpu: false });

  // The weights are read from the page's bytes a tensor at a time: 64 MiB after the last tensor, which no
  // tensor names, never reach wasm memory (a whole-file copy would grow it by at least that much).
  test("64 MiB of unread bytes after the tensors leave wasm memory as it was, and the logits unchanged", async () => {
    const r = await browser.page.evaluate(
      async ({ url, tokens }) => {
        const { init, Model } = await import("/pkg/index.js");
        const wasm = await init();
        const file = new Uint8Array(await (await fetch(url)).arrayBuffer());
        const run = async (bytes) => {
          const before = wasm.memory.buffer.byteLength;
          const model = await Model.load(bytes, { backend: "cpu", contextLen: 64, cache: false });
          const growth = wasm.memory.buffer.byteLength - before;
          const logits = [...(await model.forward(tokens))];
          model.close();
          return { growth, logits };
        };
        const plain = await run(file);
        const padded = new Uint8Array(file.length + 64 * 2 ** 20);
        padded.set(file);
        return { plain: plain.logits, padded: await run(padded) };
      },
      { url: "/tests/fixtures/decoders/llama-quant.gguf", tokens: references["llama-quant"].cases[0].tokens },
    );
    assert.deepEqual(r.padded.logits, r.plain);
    assert.ok(r.padded.growth < 8 * 2 ** 20, `wasm memory grew by ${r.padded.growth} bytes over the load`);
  });
});

describe("quantized weights on the threaded module", () => {
  const browser = browserFor({ webgpu: false, isolated: true });

  test("1 and 2 threads in a worker: the same logits, bit for bit, within the tolerance of the reference", async (t) => {
    for (const name of MODELS) {
      const one = await runCases(browser.page, name, { worker: true, threads: 1 });
      const two = await runCases(browser.page, name, { worker: true, threads: 2 });
      assert.equal(two.backend.threads, 2);
      t.diagnostic(`${name}: worst error ${check(two, "2 threads").toFixed(4)} of the spread`);
      assert.deepEqual(one.out, two.out);
    }
  });
});
