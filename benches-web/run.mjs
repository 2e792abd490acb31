// Wisp against onnxruntime-web on the same weights, in the same Chromium, in one run (see README.md).
//   node benches-web/run.mjs [--headed] [--models tiny,smollm2] [--quick]
// Writes benches-web/results/<timestamp>.json, latest.md and latest.svg.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { chromium } from "playwright-core";
import { serve } from "../tools/serve.mjs";
import { chart, table } from "./report.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const HERE = join(ROOT, "benches-web");
const MODELS_DIR = join(HERE, ".models");
const args = process.argv.slice(2);
const opt = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const headed = args.includes("--headed") || process.env.WISP_BENCH_HEADED === "1";
const quick = args.includes("--quick");
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
// The flags of tests/browser/harness.mjs.
const FLAGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync",
  "--no-first-run", "--enable-unsafe-webgpu"];

// What each model gets. Wisp on SwiftShader runs a whole chunkLen-token graph per call (~7 s for SmolLM2
// here), so SmolLM2's Wisp row is one short run, timed per token; the peers and the tiny model get more.
const PLANS = {
  tiny: {
    label: "tiny llama (fixture, 2 layers, d=64)",
    wisp: { source: { bundle: "/tests/fixtures/decoders/llama-bytes.manifest.json" }, options: { contextLen: 512 } },
    onnx: "llama",
    prompts: [32, 256], decode: 128, reps: quick ? 2 : 5, loadReps: quick ? 1 : 3,
    overrides: {}, // every engine gets the same plan
  },
  smollm2: {
    label: "SmolLM2-135M-Instruct (Q4_1 GGUF, run as f32)",
    wisp: { source: "/models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", options: { contextLen: 512 } },
    onnx: "smollm2",
    prompts: [32, 256], decode: quick ? 8 : 32, reps: quick ? 1 : 2, loadReps: 1,
    overrides: {
      // Cut: one load, one 32-token prompt, 6 new tokens, no warm-up (~2 s/token prefill, ~7 s/token decode).
      wisp: { prompts: [32], decode: 6, reps: 1, warmup: false },
      // onnxruntime's WebGPU EP on SwiftShader compiles shaders for every new cache length (~80 s to the
      // first token, ~45 s per token cold), and its renderer crashed on a second run here: one cold run.
      "ort-webgpu": { prompts: [32], decode: 4, reps: 1, warmup: false },
    },
  },
};
const models = opt("--models", "tiny,smollm2").split(",");
// ort-webgpu last: on SwiftShader it is the one that can crash the page.
const ENGINES = ["wisp", "ort-wasm", "ort-webgpu"];

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b), m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const stats = (xs) => (xs.length ? { median: median(xs), min: Math.min(...xs), max: Math.max(...xs), n: xs.length, all: xs } : null);
const log = (...m) => console.log(`[${new Date().toISOString().slice(11, 19)}]`, ...m);

// Same prompt for every engine: token ids. The tiny model's vocabulary is bytes, so a fixed pseudo-random
// byte sequence; SmolLM2 gets English text through Wisp's tokenizer, cut to length.
function tinyPrompt(n) {
  let s = 12345;
  return Array.from({ length: n }, () => ((s = (s * 1103515245 + 12345) >>> 0) >>> 16) & 255);
}
const TEXT = Array.from({ length: 60 }, (_, i) =>
  `Chapter ${i + 1}. The river town woke before dawn; fishermen checked their nets, bakers lit their ovens, ` +
  `and the old clock on the square struck ${(i % 12) + 1}. Travellers asked about the bridge, the weather and the road north.`).join(" ");

function ensureExports(names) {
  const missing = names.filter((n) => !existsSync(join(MODELS_DIR, `${n}.kv.onnx`)));
  if (missing.length) {
    log(`exporting ${missing} (tools/export_onnx_kv.py)`);
    execFileSync("python3", [join(ROOT, "tools/export_onnx_kv.py"), "--only", missing.join(",")], { stdio: "inherit" });
  }
}

async function main() {
  const plans = models.map((m) => ({ name: m, ...PLANS[m] }));
  ensureExports(plans.map((p) => p.onnx));
  const wasm = readFileSync(join(ROOT, "pkg/wisp_core_bg.wasm"));
  const server = await serve(0);
  const profile = await mkdtemp(join(os.tmpdir(), "wisp-bench-"));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: !headed, args: FLAGS });
  const page = context.pages()[0] ?? (await context.newPage());
  const consoleErrors = [];
  page.on("pageerror", (e) => consoleErrors.push(e.message));
  page.on("console", (m) => m.type() === "error" && consoleErrors.push(m.text()));
  await page.goto(`${server.url}/tests/browser/blank.html`);
  const call = (fn, ...a) => page.evaluate(async ([fn, a]) => (await import("/benches-web/page.mjs"))[fn](...a), [fn, a]);

  const started = new Date();
  const result = {
    started: started.toISOString(),
    command: `node benches-web/run.mjs ${args.join(" ")}`.trim(),
    machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, memGiB: os.totalmem() / 2 ** 30, loadavgStart: os.loadavg() },
    browser: { executable: CHROMIUM, version: execFileSync(CHROMIUM, ["--version"]).toString().trim(), headed, flags: FLAGS },
    environment: await call("environment"),
    package: { wasmBytes: wasm.length, wasmGzipBytes: gzipSync(wasm, { level: 9 }).length },
    bandwidth: null,
    models: {},
  };
  log(result.browser.version, JSON.stringify(result.environment.adapter));
  const bw = await call("copyBandwidth", 128, 5);
  result.bandwidth = { ...bw, cpuBytesPerSec: stats(bw.cpuBytesPerSec), gpuBytesPerSec: bw.gpuBytesPerSec && stats(bw.gpuBytesPerSec) };
  log(`copy: CPU ${(result.bandwidth.cpuBytesPerSec.median / 1e9).toFixed(2)} GB/s, GPU ${((result.bandwidth.gpuBytesPerSec?.median ?? 0) / 1e9).toFixed(2)} GB/s`);

  for (const plan of plans) {
    const meta = JSON.parse(readFileSync(join(MODELS_DIR, `${plan.onnx}.kv.json`), "utf8"));
    const onnxUrl = `/benches-web/.models/${plan.onnx}.kv.onnx`;
    const r = (result.models[plan.name] = { label: plan.label, weightBytesF32: meta.weightBytes, onnxBytes: statSync(join(MODELS_DIR, `${plan.onnx}.kv.onnx`)).size, engines: {} });
    let prompts = {};
    let reference = {}; // Wisp's greedy tokens per prompt length: what the peers must reproduce
    for (const engine of ENGINES) {
      const p = { warmup: true, ...plan, ...plan.overrides[engine] };
      const e = (r.engines[engine] = { load: [], runs: {}, check: {} });
      const load = engine === "wisp"
        ? () => call("wispLoad", plan.wisp.source, plan.wisp.options)
        : () => call("ortLoad", onnxUrl, meta, engine === "ort-webgpu" ? "webgpu" : "wasm");
      const generate = engine === "wisp" ? (ids, n) => call("wispGenerate", ids, n) : (ids, n) => call("ortGenerate", ids, n);
      try {
        for (let i = 0; i < p.loadReps; i++) {
          const l = await load();
          e.load.push(l.loadMs);
          e.info = { ...l, loadMs: undefined };
          log(`${plan.name} ${engine}: load ${l.loadMs.toFixed(0)} ms`);
        }
        if (engine === "wisp") {
          for (const n of plan.prompts) prompts[n] = plan.name === "tiny" ? tinyPrompt(n) : (await call("wispEncode", TEXT)).slice(0, n);
        }
        for (const n of p.prompts) {
          // The first prompt length also measures decode; longer ones only their prefill (one new token).
          const maxTokens = n === p.prompts[0] ? p.decode : 1;
          const first = await generate(prompts[n], maxTokens); // warm-up, and the greedy check
          if (engine === "wisp") reference[n] = first.tokens;
          else if (reference[n]) {
            const k = Math.min(reference[n].length, first.tokens.length);
            const at = first.tokens.slice(0, k).findIndex((t, j) => t !== reference[n][j]);
            e.check[n] = { compared: k, identical: at < 0, firstDifference: at < 0 ? null : at, wisp: reference[n].slice(0, k), peer: first.tokens.slice(0, k) };
            if (at >= 0) {
              console.error(`\n!!! GREEDY MISMATCH ${plan.name} ${engine} prompt ${n}: token ${at} is ${first.tokens[at]}, Wisp has ${reference[n][at]} — not timed\n`);
              e.runs[n] = { mismatch: true };
              continue;
            }
          }
          const samples = p.warmup ? [] : [first];
          while (samples.length < p.reps) samples.push(await generate(prompts[n], maxTokens));
          e.runs[n] = {
            promptTokens: n,
            newTokens: first.tokens.length,
            ttftMs: stats(samples.map((s) => s.ttftMs)),
            prefillTokPerSec: stats(samples.map((s) => (n * 1000) / s.ttftMs)),
            decodeTokPerSec: maxTokens > 1 ? stats(samples.map((s) => ((s.tokens.length - 1) * 1000) / s.decodeMs)) : null,
            warmup: p.warmup,
          };
          log(`${plan.name} ${engine} p${n}: TTFT ${e.runs[n].ttftMs.median.toFixed(0)} ms` +
            (e.runs[n].decodeTokPerSec ? `, decode ${e.runs[n].decodeTokPerSec.median.toFixed(2)} tok/s over ${first.tokens.length - 1}` : ""));
        }
        for (const n of plan.prompts.filter((n) => !p.prompts.includes(n))) e.runs[n] = { skipped: "too slow on this machine (see README)" };
      } catch (err) {
        e.error = String(err?.message ?? err).slice(0, 2000);
        log(`${plan.name} ${engine} FAILED: ${e.error.slice(0, 300)}`);
      }
      e.load = stats(e.load);
      await call(engine === "wisp" ? "wispClose" : "ortRelease").catch(() => {});
    }
  }
  result.finished = new Date().toISOString();
  result.machine.loadavgEnd = os.loadavg();
  result.consoleErrors = consoleErrors.slice(0, 50);
  await context.close();
  await server.close();
  await rm(profile, { recursive: true, force: true });

  mkdirSync(join(HERE, "results"), { recursive: true });
  const stamp = started.toISOString().replace(/[:.]/g, "-");
  writeFileSync(join(HERE, "results", `${stamp}.json`), JSON.stringify(result, null, 1) + "\n");
  const md = table(result, `${stamp}.json`);
  writeFileSync(join(HERE, "results", "latest.md"), md);
  writeFileSync(join(HERE, "results", "latest.svg"), chart(result));
  console.log("\n" + md);
}

await main();
