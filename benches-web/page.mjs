// The in-page half of the bench (run.mjs drives it through page.evaluate): one engine and one model
// loaded at a time, greedy generation over token ids, and timings taken with performance.now() here, so
// that no Node/Chromium round trip is counted.
const ORT_DIST = "/node_modules/onnxruntime-web/dist/";
let wisp = null;
let wispInWorker = false;
let ort = null;
let peer = null;

// GPU memory we allocate: every buffer created through the page's WebGPU devices, live and peak bytes.
// run.mjs installs this before any page script (addInitScript) and reloads the page per engine.
export function trackGpuBuffers() {
  if (!self.GPUDevice || self.__gpuBytes) return;
  const track = (self.__gpuBytes = { live: 0, peak: 0, created: 0 });
  const sizes = new WeakMap();
  const create = GPUDevice.prototype.createBuffer;
  GPUDevice.prototype.createBuffer = function (desc) {
    const buffer = create.call(this, desc);
    sizes.set(buffer, desc.size);
    track.live += desc.size;
    track.created += desc.size;
    track.peak = Math.max(track.peak, track.live);
    return buffer;
  };
  const destroy = GPUBuffer.prototype.destroy;
  GPUBuffer.prototype.destroy = function () {
    track.live -= sizes.get(this) ?? 0;
    sizes.delete(this);
    return destroy.call(this);
  };
}

/**
 * Peak bytes of Wisp's wasm heap (a WebAssembly.Memory only grows, so its size now is its peak; run.mjs
 * reloads the page per engine) and of the GPU buffers created since the page loaded.
 */
export async function memory(wispEngine) {
  // A worker's heap is out of the page's reach (null).
  const heap = wispEngine && !wispInWorker ? (await (await import("/pkg/index.js")).init()).memory.buffer.byteLength : null;
  const gpu = self.__gpuBytes;
  return { wasmHeapBytes: heap, gpuBufferPeakBytes: gpu?.peak ?? null, gpuBufferCreatedBytes: gpu?.created ?? null };
}

export async function environment() {
  const adapter = await navigator.gpu?.requestAdapter();
  const info = adapter?.info ?? {};
  return {
    userAgent: navigator.userAgent,
    hardwareConcurrency: navigator.hardwareConcurrency,
    crossOriginIsolated: self.crossOriginIsolated,
    adapter: adapter
      ? { vendor: info.vendor, architecture: info.architecture, device: info.device, description: info.description,
          maxBufferSize: adapter.limits.maxBufferSize, features: [...adapter.features].sort() }
      : null,
  };
}

/** Copy bandwidth in this page: bytes copied per second (each byte read once and written once). */
export async function copyBandwidth(mb = 128, reps = 5) {
  const bytes = mb << 20;
  const src = new Uint8Array(bytes).fill(7);
  const dst = new Uint8Array(bytes);
  const cpu = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    dst.set(src);
    cpu.push(bytes / ((performance.now() - t0) / 1000));
  }
  const out = { bytes, cpuBytesPerSec: cpu };
  const adapter = await navigator.gpu?.requestAdapter();
  if (adapter) {
    const device = await adapter.requestDevice();
    const size = Math.min(bytes, adapter.limits.maxBufferSize);
    const a = device.createBuffer({ size, usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    const b = device.createBuffer({ size, usage: GPUBufferUsage.COPY_DST });
    const gpu = [];
    for (let i = 0; i <= reps; i++) {
      const t0 = performance.now();
      const enc = device.createCommandEncoder();
      enc.copyBufferToBuffer(a, 0, b, 0, size);
      device.queue.submit([enc.finish()]);
      await device.queue.onSubmittedWorkDone();
      if (i > 0) gpu.push(size / ((performance.now() - t0) / 1000)); // the first one pays for allocation
    }
    device.destroy();
    Object.assign(out, { gpuBytes: size, gpuBytesPerSec: gpu });
  }
  return out;
}

const argmax = (row) => {
  let best = 0;
  for (let j = 1; j < row.length; j++) if (row[j] > row[best]) best = j;
  return best;
};

// ---- Wisp, through the built package ----

// `worker: true` loads a WorkerModel (worker mode: where the CPU backend runs on several threads); every
// call below awaits, which serves both.
export async function wispLoad(source, { worker, ...options }) {
  wisp?.close();
  wisp = null;
  const { Model, WorkerModel } = await import("/pkg/index.js");
  // Threads are opt-in (the threaded module is only loaded by this import).
  if (worker && options.threads > 1) await import("/pkg/threads.js");
  const t0 = performance.now();
  wisp = await (worker ? WorkerModel : Model).load(source, { cache: false, ...options });
  wispInWorker = Boolean(worker);
  return { loadMs: performance.now() - t0, contextLength: wisp.contextLength, vocab: wisp.config.vocabSize, backend: wisp.backend, worker: Boolean(worker) };
}

export async function wispEncode(text) {
  return [...(await wisp.encode(text))];
}

/**
 * Greedy generation from a cold cache: seek(0) first, or the prompt would be reused from the last run.
 * `draftTokens`: 0 for plain one-token-per-pass decoding, as the peers do; 7 for prompt-lookup drafts (opt-in on the CPU backend)
 * prompt-lookup speculation. `profile`: resets the model's profile first and returns it with the run.
 */
export async function wispGenerate(ids, maxTokens, { draftTokens, profile } = {}) {
  await wisp.seek(0);
  if (profile) await wisp.resetProfile();
  const r = await wisp.generate(ids, { maxTokens, temperature: 0, draftTokens });
  if (r.usage.cachedTokens !== 0) throw new Error(`prefix reuse: ${r.usage.cachedTokens} cached tokens`);
  const decodeMs = r.usage.totalMs - r.usage.ttftMs;
  return {
    tokens: r.tokens, finishReason: r.finishReason, ttftMs: r.usage.ttftMs, decodeMs, totalMs: r.usage.totalMs,
    passes: r.usage.passes, acceptedDraftTokens: r.usage.acceptedDraftTokens, profile: profile ? await wisp.profile() : undefined,
  };
}

/**
 * One agent task through `createAgent` with the demo tools (www/tools.js) on the loaded model: the
 * question to the final answer, tool calls included. Also whether the chat template renders tools at all.
 */
export async function wispAgentTask(question, maxSteps, maxTokens) {
  const { createAgent } = await import("/pkg/index.js");
  const { demoTools } = await import("/www/tools.js");
  const messages = [{ role: "user", content: question }];
  const templateShowsTools = (await wisp.renderChat(messages, { tools: demoTools.map(([spec]) => spec) })) !== (await wisp.renderChat(messages));
  await wisp.seek(0);
  const agent = await createAgent({ model: wisp, system: "You are a helpful assistant.", maxSteps, temperature: 0 });
  for (const [spec, fn] of demoTools) agent.tool(spec, fn);
  const events = [];
  const t0 = performance.now();
  const result = await agent.run(question, { maxTokens, onEvent: (e) => e.type.startsWith("tool") && events.push(e) });
  const ms = performance.now() - t0;
  // The same task again after reset(): the system + tools prefix is reused from the cache, as a page's
  // second question would.
  agent.reset();
  await wisp.resetProfile();
  const t1 = performance.now();
  const again = await agent.run(question, { maxTokens });
  const againMs = performance.now() - t1;
  return {
    question, ms, againMs, againCachedTokens: again.usage.cachedTokens, againUsage: again.usage, againProfile: await wisp.profile(), templateShowsTools, steps: result.steps, finishReason: result.finishReason, text: result.text.slice(0, 300),
    // Each call with its outcome; an invalid call (bad JSON, unknown tool, schema) has only an error event.
    toolCalls: events.filter((e) => e.type === "tool_call" || e.invalid).map((c) => {
      const done = c.invalid ? c : events.find((e) => e.id === c.id && e.type !== "tool_call");
      return { name: c.name, arguments: c.arguments, ok: done?.type === "tool_result", result: done?.result ?? done?.error };
    }),
    usage: result.usage,
  };
}

/**
 * The agent task on the first run of a page whose earlier visit kept the agent's prefix in the Cache API:
 * two loads with `cache` on, one run each (the first stands for the earlier visit, which keeps the prefix;
 * the second for the reloaded page, which restores it). Load times are not counted, as in
 * `wispAgentTask`. Closes the bench's own model first: the loads share its wasm memory.
 */
export async function wispAgentReloaded(source, { worker, ...options }, question, maxSteps, maxTokens) {
  wispClose();
  const { Model, WorkerModel, clearModelCache, createAgent } = await import("/pkg/index.js");
  const { demoTools } = await import("/www/tools.js");
  await clearModelCache();
  const visit = async () => {
    const model = await (worker ? WorkerModel : Model).load(source, { ...options, cache: true });
    const agent = await createAgent({ model, system: "You are a helpful assistant.", maxSteps, temperature: 0 });
    for (const [spec, fn] of demoTools) agent.tool(spec, fn);
    const t0 = performance.now();
    const r = await agent.run(question, { maxTokens });
    const ms = performance.now() - t0;
    agent.close();
    model.close();
    return { ms, usage: r.usage, text: r.text, calls: r.toolCalls.map((c) => [c.name, c.arguments]) };
  };
  const first = await visit();
  // The prefix is written after the run, in the background.
  const store = await caches.open("wisp-models-v1");
  const kept = async () => (await store.keys()).some((r) => r.url.startsWith("https://wisp.invalid/prefix/"));
  for (let i = 0; i < 100 && !(await kept()); i++) await new Promise((r) => setTimeout(r, 100));
  const prefixKept = await kept();
  const reloaded = await visit();
  await clearModelCache();
  return {
    prefixKept,
    firstVisitMs: first.ms,
    ms: reloaded.ms,
    usage: reloaded.usage,
    sameAnswer: JSON.stringify([first.text, first.calls]) === JSON.stringify([reloaded.text, reloaded.calls]),
  };
}

export function wispClose() {
  wisp?.close();
  wisp = null;
}

// ---- onnxruntime-web over the KV-cache export (tools/export_onnx_kv.py) ----

export async function ortLoad(url, meta, ep, threads) {
  await ortRelease();
  ort ??= await import(`${ORT_DIST}ort.webgpu.min.mjs`);
  ort.env.wasm.wasmPaths = ORT_DIST;
  // More than one thread needs a cross-origin isolated page (SharedArrayBuffer); without one the wasm EP
  // runs one thread whatever this says. Read when the first session starts the wasm runtime, once per page.
  if (threads) ort.env.wasm.numThreads = threads;
  const t0 = performance.now();
  const session = await ort.InferenceSession.create(url, { executionProviders: [ep], graphOptimizationLevel: "all" });
  peer = { session, meta };
  return { loadMs: performance.now() - t0, numThreads: ort.env.wasm.numThreads, ortVersion: ort.env.versions?.web };
}

export async function ortRelease() {
  await peer?.session.release();
  peer = null;
}

/** Prefill in one run, then one token per run; the cache goes back in as the next run's past. */
export async function ortGenerate(ids, maxTokens) {
  const { session, meta } = peer;
  const { layers, kvHeads, headDim } = meta;
  const T = ort.Tensor;
  let feeds = {};
  for (let i = 0; i < layers; i++) {
    feeds[`past_key_${i}`] = new T("float32", new Float32Array(0), [kvHeads, 0, headDim]);
    feeds[`past_value_${i}`] = new T("float32", new Float32Array(0), [kvHeads, 0, headDim]);
  }
  const tokens = [];
  let past = 0;
  let chunk = ids;
  const t0 = performance.now();
  let firstAt = 0;
  while (tokens.length < maxTokens) {
    const n = chunk.length;
    const mask = new Float32Array(n * (past + n));
    for (let r = 0; r < n; r++) for (let c = past + r + 1; c < past + n; c++) mask[r * (past + n) + c] = -Infinity;
    const out = await session.run({
      ...feeds,
      input_ids: new T("int64", BigInt64Array.from(chunk, BigInt), [n]),
      position_ids: new T("int64", BigInt64Array.from({ length: n }, (_, j) => BigInt(past + j)), [n]),
      attention_mask: new T("float32", mask, [n, past + n]),
    });
    const next = argmax(out.logits.data);
    tokens.push(next);
    if (!firstAt) firstAt = performance.now();
    for (const k of Object.keys(feeds)) feeds[k].dispose?.();
    feeds = {};
    for (let i = 0; i < layers; i++) {
      feeds[`past_key_${i}`] = out[`present_key_${i}`];
      feeds[`past_value_${i}`] = out[`present_value_${i}`];
    }
    out.logits.dispose?.();
    past += n;
    chunk = [next];
  }
  const end = performance.now();
  for (const k of Object.keys(feeds)) feeds[k].dispose?.();
  return { tokens, ttftMs: firstAt - t0, decodeMs: end - firstAt, totalMs: end - t0 };
}

// ---- wllama 3.13 (llama.cpp compiled to wasm, @wllama/wllama) over the same GGUF file ----

const WLLAMA = "/node_modules/@wllama/wllama/esm/";
let wllama = null;

// `threads`: 1, or more in a cross-origin isolated page (its multi-thread build); it runs in its own worker.
export async function wllamaLoad(url, threads, contextLen) {
  await wllamaRelease();
  const { Wllama } = await import(`${WLLAMA}index.js`);
  wllama = new Wllama({ default: `${WLLAMA}wasm/wllama.wasm` }, { suppressNativeLog: true });
  const t0 = performance.now();
  await wllama.loadModelFromUrl(url, { n_ctx: contextLen, n_threads: threads, n_batch: 512, useCache: false });
  return { loadMs: performance.now() - t0, threads: wllama.getNumThreads(), multithread: wllama.isMultithread() };
}

/**
 * Greedy completion of `text` (wllama's completion API takes text, not token ids: the bench gives it Wisp's
 * prompt ids decoded, and reports the token count llama.cpp made of them), exactly `maxTokens` new tokens
 * (end of text ignored), prompt not reused. Timed from the request to the first streamed token and from
 * there to the last, as the other engines.
 */
export async function wllamaGenerate(text, maxTokens) {
  const t0 = performance.now();
  let first = 0;
  let out = "";
  let last = null;
  const stream = await wllama.createCompletion({ prompt: text, max_tokens: maxTokens, temperature: 0, top_k: 1, ignore_eos: true, cache_prompt: false, stream: true });
  for await (const chunk of stream) {
    if (!first) first = performance.now();
    out += chunk.choices?.[0]?.text ?? "";
    last = chunk;
  }
  const end = performance.now();
  if (last?.usage?.prompt_tokens_details?.cached_tokens) throw new Error("wllama reused the prompt");
  return { text: out, promptTokens: last?.usage?.prompt_tokens, newTokens: last?.usage?.completion_tokens, ttftMs: first - t0, decodeMs: end - first, totalMs: end - t0 };
}

export async function wllamaRelease() {
  await wllama?.exit();
  wllama = null;
}

export async function wispDecode(ids) {
  return wisp.decode(ids);
}
