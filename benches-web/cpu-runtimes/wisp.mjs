// Wisp's CPU backend in Node (the package's plain simd128 module, one thread) on the prompt ids of
// src/lib.rs: load, TTFT and decode tok/s, printed as the runtimes' programs print them. Needs pkg/ built.
//     node wisp.mjs wisp-mini|smollm2 PROMPT_LEN DECODE REPS
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { serve } from "../../tools/serve.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const [model, promptLen, decode, reps] = [process.argv[2], ...process.argv.slice(3).map(Number)];
const server = await serve(0);
try {
  const { init, Model } = await import("../../pkg/index.js");
  await init({ wasmUrl: `${server.url}/pkg/wisp_core_bg.wasm` });
  // The bundled model's files without its manifest: no stop tokens end the timed continuation.
  const source = model === "wisp-mini"
    ? { weights: `${server.url}/models/wisp-mini/model.safetensors`, tokenizer: `${server.url}/models/wisp-mini/tokenizer.json`,
        config: readFileSync(`${ROOT}/models/wisp-mini/config.json`, "utf8") }
    : `${server.url}/models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`;
  const t0 = performance.now();
  const m = await Model.load(source, { cache: false, backend: "cpu", contextLen: 2048 });
  console.log(`load_ms ${(performance.now() - t0).toFixed(1)}`);
  const ids = Array.from({ length: promptLen }, (_, i) => ((i * 37 + 11) % 1500) + 5);
  const ttfts = [], rates = [];
  for (let r = 0; r < reps; r++) {
    await m.seek(0);
    const g = await m.generate(ids, { maxTokens: decode + 1, temperature: 0, draftTokens: 0 });
    ttfts.push(g.usage.ttftMs);
    rates.push((g.tokens.length - 1) / ((g.usage.totalMs - g.usage.ttftMs) / 1000));
  }
  const sorted = (xs) => [...xs].sort((a, b) => a - b);
  const [t, d] = [sorted(ttfts), sorted(rates)];
  console.log(`prompt ${promptLen}: ttft_ms median ${t[reps >> 1].toFixed(1)} min ${t[0].toFixed(1)}; ` +
    `decode tok/s median ${d[reps >> 1].toFixed(1)} max ${d[reps - 1].toFixed(1)} (over ${decode})`);
  m.close();
} finally {
  await server.close();
}
