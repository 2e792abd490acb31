// The two builds of the main module in Chromium, which validates relaxed SIMD: by default the page loads
// the relaxed one (fused multiply-adds) and the CPU backend says so; `init({ relaxedSimd: false })` loads
// the plain one. The bundled model's logits from both stay within the golden tolerance of the PyTorch
// reference, and their greedy tokens are the same.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, test } from "node:test";
import { openBrowser } from "./harness.mjs";

let browser;
let golden;
before(async () => {
  golden = JSON.parse(await readFile(new URL("../fixtures/bundled/golden.json", import.meta.url), "utf8"));
  browser = await openBrowser({ webgpu: false });
});
after(async () => {
  await browser?.close();
});

// In a fresh page (a realm loads the wasm module once): which module the page fetched, the backend, the
// last position's logits of the golden prompt and 24 greedy tokens.
async function run(relaxedSimd) {
  const page = await browser.context.newPage();
  try {
    await page.goto(`${browser.url}/tests/browser/blank.html`);
    return await page.evaluate(
      async ({ relaxedSimd, ids }) => {
        const wisp = await import("/pkg/index.js");
        await wisp.init(relaxedSimd === undefined ? {} : { relaxedSimd });
        const model = await wisp.Model.load({ bundle: "/models/wisp-mini/manifest.json" }, { backend: "cpu", cache: false });
        const logits = await model.forward(ids);
        await model.seek(0);
        const r = await model.generate(ids, { maxTokens: 24, temperature: 0 });
        const out = {
          engineHasRelaxed: wisp.relaxedSimd,
          fetched: performance.getEntriesByType("resource").map((e) => e.name.split("/").pop()).filter((n) => n.endsWith(".wasm")),
          backend: model.backend,
          last: [...logits.slice(logits.length - model.config.vocabSize)],
          tokens: r.tokens,
        };
        model.close();
        return out;
      },
      { relaxedSimd, ids: golden.cases[0].token_ids },
    );
  } finally {
    await page.close();
  }
}

test("Chromium loads the relaxed build by default and the plain one on request: the same tokens, logits within tolerance", async () => {
  const relaxed = await run(undefined);
  const plain = await run(false);
  assert.equal(relaxed.engineHasRelaxed, true);
  assert.deepEqual(relaxed.fetched, ["wisp_core_relaxed_bg.wasm"]);
  assert.deepEqual(plain.fetched, ["wisp_core_bg.wasm"]);
  assert.equal(relaxed.backend.simd, "relaxed");
  assert.equal(plain.backend.simd, "simd128");

  const reference = golden.cases[0].last_logits;
  for (const r of [relaxed, plain]) {
    const diff = Math.max(...r.last.map((v, i) => Math.abs(v - reference[i])));
    assert.ok(diff <= 1e-4, `${r.backend.simd}: max |logit - reference| = ${diff}`);
  }
  assert.deepEqual(relaxed.tokens, plain.tokens);
  assert.ok(relaxed.last.some((v, i) => v !== plain.last[i]), "the two builds compute the same bits: is the relaxed build fused at all?");
});
