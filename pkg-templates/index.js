// The public entry of the wisp-agent package: loads the wasm core once and wraps it in a small API whose
// errors are all `WispError`s with a stable `code`.
import { WispError, crashCount, crashedError, freshImport, onCrash, toWispError } from "./errors.js";
import { checkBytes, checkModelBytes, clearModelCache, fetchFile, forget, keepMeasured, readFileUrl, readMeasured, resolveUrl } from "./fetch.js";
import { keepPrefixesOf } from "./prefix-cache.js";
import { checkInput, generationRequest } from "./requests.js";
import { breathe } from "./event-loop.js";
import { queueOf } from "./queue.js";
import { threading } from "./threading.js";
import { streamWithResult } from "./streams.js";

export { WispError, ERROR_CODES } from "./errors.js";
export { clearModelCache };
import { WorkerModel } from "./worker-client.js";
import { createAgentFor, createWorkerAgentFor } from "./agent.js";

export { WorkerModel };
export { createChatCompletions, openaiFetch } from "./openai.js";

/**
 * Creates an agent: `options.model` is a loaded `Model` or `WorkerModel`, or a source for `Model.load`
 * (default: wisp-mini, which ships inside the package);
 * other options: `worker` (load the source into a `WorkerModel`), `system`, `contextPolicy` (`"trim"`, the
 * default, `"error"` or a function: docs/guide.md, "Long conversations"), `maxSteps` (default 6),
 * `toolCallFormat`, `maxResultTokens` (the most tokens of one tool result the model reads; default a quarter
 * of the context), `maxResultChars` (a limit in characters too; none by default), `temperature`, `maxTokens`, and `load` (options for
 * `Model.load`).
 */
export async function createAgent(options = {}) {
  const { model: given, load, worker, ...rest } = options;
  // Imported only when needed: an app that loads its own model still gets the default's files copied by
  // its bundler, but never downloads them.
  const source = given ?? (await import("./models/wisp-mini.js")).wispMini;
  if (worker || source instanceof WorkerModel) {
    const owned = !(source instanceof WorkerModel);
    const model = owned ? await WorkerModel.load(source, load) : source;
    try {
      return await createWorkerAgentFor(model, rest, owned ? () => model.close() : undefined);
    } catch (e) {
      if (owned) model.close();
      throw e;
    }
  }
  const owned = !(source instanceof Model);
  const model = owned ? await Model.load(source, load) : source;
  try {
    return createAgentFor(model, rest, owned ? () => model.close() : undefined);
  } catch (e) {
    if (owned) model.close();
    throw e;
  }
}

// A module with one `f32x4.relaxed_madd`: engines that validate it run relaxed SIMD (Chromium and Edge
// do; Node 20, Safari and Firefox's release builds do not).
const RELAXED_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 61, 1, 59, 0,
  ...[0, 1, 2].flatMap(() => [253, 12, ...new Array(16).fill(0)]), 253, 133, 2, 11,
]);

/**
 * Whether this engine runs the relaxed-SIMD builds of the modules (`*_relaxed*`): their multiply-adds are
 * fused where the hardware can (prompts on the CPU backend took 7-17% less time in Chromium here).
 */
export const relaxedSimd = typeof WebAssembly === "object" && WebAssembly.validate(RELAXED_PROBE);

let core = null;
let ready = null;
// Whether this realm's modules are the relaxed builds (`init`'s `relaxedSimd: false` turns them off).
let useRelaxed = relaxedSimd;
// The options of the first `init`, also for the new instances after a crash.
let initOptions = {};

/**
 * Loads and instantiates the wasm module (once; later calls return the same promise, which resolves to
 * the module's exports). Where the engine has relaxed SIMD (`relaxedSimd`) that is the relaxed build,
 * unless `relaxedSimd: false` asks for the plain one, whose results are the same on every machine (a
 * fused multiply-add rounds once, so the relaxed build's last bits can differ between CPUs); the choice
 * also holds for this realm's threaded module. Bundlers find the `.wasm` files through the
 * `new URL(..., import.meta.url)` below; to serve them from elsewhere pass `wasmUrl`, the URL of
 * `wisp_core_bg.wasm`, with `wisp_core_relaxed_bg.wasm` next to it. In Node, `wasmUrl` may be a file path
 * or `file:` URL (read from disk), and the package's own files are read from disk by default; `wasm`
 * takes the bytes of `wisp_core_bg.wasm` instead (the plain build then runs).
 */
export function init(options = initOptions) {
  if (!ready) {
    initOptions = options;
    useRelaxed = relaxedSimd && options.relaxedSimd !== false && !options.wasm;
    const given = options.wasmUrl && resolveUrl(options.wasmUrl);
    let wasm = given ?? new URL("./wisp_core_bg.wasm", import.meta.url);
    if (useRelaxed) wasm = given ? new URL("wisp_core_relaxed_bg.wasm", given) : new URL("./wisp_core_relaxed_bg.wasm", import.meta.url);
    ready = (async () => {
      const glue = crashCount()
        ? await freshImport(useRelaxed ? "./wisp_core_relaxed.js" : "./wisp_core.js")
        : useRelaxed
          ? await import("./wisp_core_relaxed.js")
          : await import("./wisp_core.js");
      const exports = await glue.default({ module_or_path: toBytes(options.wasm) ?? (await readable(wasm)) });
      core = glue;
      return exports;
    })().catch((e) => {
      ready = null;
      const from = options.wasm ? "the bytes given" : wasm;
      throw new WispError("WASM_LOAD", `could not load the Wisp wasm module from ${from}: ${e?.message ?? e}`);
    });
  }
  return ready;
}

// What wasm-bindgen's loader can take for `url`: the URL itself, or for a `file:` URL (Node, whose fetch
// reads none) the file's bytes.
async function readable(url) {
  return url.protocol === "file:" ? readFileUrl(url) : url;
}

// After a trap the next load starts new instances (errors.js).
onCrash(() => {
  ready = null;
  core = null;
});

function rethrow(e) {
  throw toWispError(e);
}

// Runs a core call, with our error class for what it rejects with.
async function guard(fn) {
  try {
    return await fn();
  } catch (e) {
    rethrow(e);
  }
}

async function call(fn) {
  await init();
  return guard(fn);
}

/**
 * Threads for a CPU model: `requested`, by default `navigator.hardwareConcurrency`, where threads can run:
 * in a cross-origin isolated context (they share memory through a SharedArrayBuffer), in a worker (worker
 * mode). The page's main thread may not block while they work (`Atomics.wait` is refused there): rayon
 * then spins on a lock the workers need, and a model on the page ran slower on 2 threads than on 1, so
 * there it runs on one.
 */
function cpuThreads(requested) {
  if (requested !== undefined && !(Number.isInteger(requested) && requested >= 1)) {
    throw new WispError("INVALID_REQUEST", `threads is ${requested}; it must be a whole number >= 1`);
  }
  const inWorker = typeof WorkerGlobalScope === "function" && globalThis instanceof WorkerGlobalScope;
  if (!inWorker || globalThis.crossOriginIsolated !== true || typeof SharedArrayBuffer !== "function") return 1;
  return requested ?? Math.max(1, navigator.hardwareConcurrency ?? 1);
}

/**
 * The module a model loads into: the threaded CPU one when the model will run on the CPU with more than
 * one thread, the main one (WebGPU, and the CPU on one thread) otherwise. `auto` decides as the core does:
 * WebGPU on a hardware adapter, the CPU otherwise. Resolves to `{ module, backend, reason }`: the backend
 * to ask the module for, and for the CPU chosen here, why.
 */
async function moduleFor(backend, requestedThreads) {
  const threads = cpuThreads(requestedThreads);
  if (threads >= 2 && !threading.load && backend === "cpu") {
    await init();
    return { module: core, backend, reason: `asked for; on 1 thread: the threaded module is not loaded (import "wisp-agent/threads")` };
  }
  if (threads < 2 || !threading.load || (backend !== "cpu" && backend !== "auto")) {
    await init();
    return { module: core, backend };
  }
  let reason = "asked for";
  if (backend === "auto") {
    await init();
    try {
      const adapter = await core.adapterInfo();
      if (!adapter.isFallbackAdapter) return { module: core, backend };
      reason = "auto: the WebGPU adapter is a software fallback, slower than the CPU kernels";
    } catch (e) {
      reason = `auto: ${e?.message ?? e}`;
    }
  }
  try {
    return { module: await threading.load(threads, { relaxed: useRelaxed }), backend: "cpu", reason };
  } catch (e) {
    // The threads did not start (say, a Content-Security-Policy without blob: workers, or no room for a
    // shared heap): the model still runs, on one thread, and says why.
    await init();
    return { module: core, backend: "cpu", reason: `${reason}; on 1 thread: ${e.message}` };
  }
}

/**
 * The GPU devices Wisp holds and their buffers still alive: `{ devices, buffers, bytes }` (for leak checks;
 * closing a model or session gives its device back, buffers included).
 */
export function gpuResources() {
  return call(() => core.gpuResources());
}

/** Describes the page's WebGPU adapter; rejects with code `WEBGPU_UNAVAILABLE` (and why) when there is none. */
export function adapterInfo() {
  return call(() => core.adapterInfo());
}

function toBytes(source) {
  if (source instanceof Uint8Array) return source;
  if (source instanceof ArrayBuffer) return new Uint8Array(source);
  if (ArrayBuffer.isView(source)) return new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  return null;
}

/** An ONNX graph compiled for this page's GPU. Every GPU failure rejects; none returns zeros. */
export class GraphSession {
  #inner;
  #epoch = crashCount();

  constructor(inner) {
    this.#inner = inner;
  }

  /** `source`: the model's bytes (Uint8Array, ArrayBuffer) or a URL to fetch them from. */
  static async create(source) {
    const bytes = toBytes(source) ?? (await fetchFile(source, { cache: false })).bytes;
    return new GraphSession(await call(() => core.GraphSession.create(bytes)));
  }

  get inputs() {
    return this.#inner.inputs;
  }

  get outputs() {
    return this.#inner.outputs;
  }

  get adapter() {
    return this.#inner.adapter;
  }

  /** `inputs`: `{ name: Float32Array | number[] }`; resolves to `{ name: { dims, data: Float32Array } }`. */
  run(inputs) {
    if (!this.#inner) return Promise.reject(new WispError("SESSION_CLOSED", "this session was closed"));
    if (this.#epoch !== crashCount()) return Promise.reject(crashedError());
    if (inputs === null || typeof inputs !== "object") {
      return Promise.reject(new WispError("INVALID_INPUT", "run() takes an object mapping input names to arrays"));
    }
    return call(() => this.#inner.run(inputs));
  }

  /** Destroys the GPU device as a driver reset would: later runs reject with `GPU_DEVICE_LOST`. */
  loseDevice() {
    this.#inner?.loseDevice();
  }

  /** Frees the session's GPU device and memory now rather than at garbage collection. */
  close() {
    // A crashed instance is not entered again; its memory goes with it.
    if (this.#epoch === crashCount()) this.#inner?.free();
    this.#inner = null;
  }
}

/** Parses and checks a bundle manifest; rejects with INVALID_MANIFEST naming the problem. */
export async function parseManifest(text) {
  return call(() => core.parseManifest(text));
}

// What a load rejects with when a file's bytes are not a model it can use: from a cached file, the cue to
// download it again.
const STALE_CODES = new Set(["INVALID_WEIGHTS", "UNSUPPORTED_WEIGHTS", "INVALID_MODEL", "INVALID_ADAPTER"]);

/** The `adapters` option checked: `[{ url | bytes, scale? }]`. */
function checkAdapters(adapters) {
  const bad = (why) => new WispError("INVALID_REQUEST", `adapters: ${why}`);
  if (!Array.isArray(adapters)) throw bad("must be an array of { url | bytes, scale }");
  for (const [i, a] of adapters.entries()) {
    if (a === null || typeof a !== "object") throw bad(`[${i}] must be { url | bytes, scale }`);
    const unknown = Object.keys(a).find((k) => !["url", "bytes", "scale"].includes(k));
    if (unknown) throw bad(`[${i}] has an unknown field '${unknown}'`);
    if ((a.url === undefined) === (a.bytes === undefined)) throw bad(`[${i}] needs exactly one of url and bytes`);
    if (a.bytes !== undefined && !toBytes(a.bytes)) throw bad(`[${i}].bytes must be a Uint8Array or an ArrayBuffer`);
    if (a.scale !== undefined && !(typeof a.scale === "number" && Number.isFinite(a.scale))) {
      throw bad(`[${i}].scale must be a finite number`);
    }
  }
}

// Text files (manifest, config, chat template) must be UTF-8: a lenient decoder would turn bad bytes into
// U+FFFD and load a model with a silently different configuration or template.
const utf8 = new TextDecoder("utf-8", { fatal: true });

// `module`: the (initialized) core module whose manifest parser to use. `fetched` lists the downloads
// (`fetchFile`'s results with their `url`), to be kept in the cache once the model loaded.
// `extra`: the `adapters` and `baseWeights` load options.
async function resolveSource(source, fetchOptions, module, extra = {}) {
  const fetched = [];
  // `file`: the manifest's entry (sha256, size); `prefer`: as fetchFile's.
  const get = async (item, file = {}, prefer = undefined) => {
    const bytes = toBytes(item);
    if (bytes) {
      checkModelBytes(bytes.byteLength, "the bytes given have");
      await checkBytes(bytes, file, "the bytes given for the manifest's weights");
      return bytes;
    }
    const got = await fetchFile(item, { ...fetchOptions, sha256: file.sha256, size: file.size, prefer });
    fetched.push({ url: item, ...got });
    return got.bytes;
  };
  const text = async (item, file, code = "INVALID_MODEL", prefer = undefined) => {
    const bytes = await get(item, file, prefer);
    try {
      return utf8.decode(bytes);
    } catch {
      throw new WispError(code, `${item} is not UTF-8 text`);
    }
  };
  const optionAdapters = async () =>
    Promise.all((extra.adapters ?? []).map(async (a) => ({ bytes: await get(a.bytes ?? resolveUrl(a.url)), scale: a.scale ?? 1 })));
  if (extra.baseWeights !== undefined && !source?.bundle) {
    throw new WispError("INVALID_REQUEST", "baseWeights names where a bundle's weights are served; this source is no bundle");
  }
  if (toBytes(source) || typeof source === "string" || source instanceof URL) {
    return { weights: await get(source), adapters: await optionAdapters(), fetched };
  }
  if (source && source.bundle) {
    const base = resolveUrl(source.bundle);
    // Asked of the server first: a changed manifest is how a model update reaches returning users.
    const manifest = await guard(async () => module.parseManifest(await text(base, {}, "INVALID_MANIFEST", "network")));
    const f = manifest.files;
    // `files`: where some of the manifest's files really are (a bundler renames what it copies).
    const moved = source.files ?? {};
    if (typeof moved !== "object" || Array.isArray(moved)) {
      throw new WispError("INVALID_REQUEST", "a bundle's files must map paths of its manifest to URLs or bytes");
    }
    const files = [f.weights, f.tokenizer, f.config, f.chat_template, ...(f.adapters ?? [])].filter(Boolean);
    const stray = Object.keys(moved).filter((path) => !files.some((file) => file.path === path));
    if (stray.length) throw new WispError("INVALID_REQUEST", `files names ${stray.join(", ")}, which the manifest does not`);
    if (extra.baseWeights !== undefined && Object.hasOwn(moved, f.weights.path)) {
      throw new WispError("INVALID_REQUEST", `baseWeights and files both say where ${f.weights.path} is`);
    }
    const at = (file) => (Object.hasOwn(moved, file.path) ? toBytes(moved[file.path]) ?? resolveUrl(moved[file.path]) : new URL(file.path, base));
    const elsewhere = extra.baseWeights;
    // Before any download: the sizes the manifest gives, together.
    checkModelBytes(files.reduce((sum, file) => sum + (file.size ?? 0), 0), `${manifest.name ?? "the bundle"}'s files have`);
    return {
      manifest,
      // The manifest's sha256 and size still hold for a base file served elsewhere.
      weights: await get(elsewhere === undefined ? at(f.weights) : toBytes(elsewhere) ?? resolveUrl(elsewhere), f.weights),
      adapters: [
        ...(await Promise.all((f.adapters ?? []).map(async (a) => ({ bytes: await get(at(a), a), scale: a.scale ?? 1 })))),
        ...(await optionAdapters()),
      ],
      tokenizer: f.tokenizer ? await get(at(f.tokenizer), f.tokenizer) : undefined,
      config: f.config ? await text(at(f.config), f.config) : undefined,
      chatTemplate: f.chat_template ? await text(at(f.chat_template), f.chat_template) : undefined,
      contextLen: manifest.context_length,
      stop: manifest.stop,
      fetched,
    };
  }
  if (source && source.weights) {
    const config = source.config;
    return {
      weights: await get(source.weights),
      adapters: await optionAdapters(),
      tokenizer: source.tokenizer ? await get(source.tokenizer) : undefined,
      config: config === undefined || typeof config === "string" ? config : JSON.stringify(config),
      chatTemplate: source.chatTemplate,
      fetched,
    };
  }
  throw new WispError(
    "INVALID_REQUEST",
    "Model.load takes a GGUF URL or bytes, { bundle: manifestUrl }, or { weights, tokenizer, config, chatTemplate }",
  );
}

/**
 * A decoder language model on the GPU, with its tokenizer, chat template and key/value cache.
 * Calls that run the model take turns in arrival order (`generate`, `stream`, agent messages, OpenAI
 * requests wait in the model's queue; `wait: false` rejects with BUSY instead); `forward` never waits. A
 * call made inside a `stream` loop over the same model waits for that stream, which waits for the loop:
 * give such a call `wait: false`, or finish the loop first.
 */
export class Model {
  #inner;
  #manifest;
  #module;
  // The crash count when the model was made: a model outlives no trap of its instance (errors.js).
  #epoch = crashCount();

  constructor(inner, manifest, module) {
    this.#inner = inner;
    this.#manifest = manifest;
    this.#module = module;
  }

  /**
   * `source`: a GGUF URL or bytes; `{ bundle: "…/manifest.json" }`; or `{ weights, tokenizer, config,
   * chatTemplate }` (URLs or bytes; `config` a config.json object or text). `options`: `{ onProgress,
   * signal, cache (default true), chunkLen, contextLen, backend ("auto", "webgpu", "cpu"), threads }`;
   * `threads`: the CPU backend's threads in a worker of a cross-origin isolated page (default
   * `navigator.hardwareConcurrency`; 1 keeps the single-threaded module), `adapters` (`[{ url | bytes,
   * scale }]`, LoRA adapters in llama.cpp's GGUF format), `baseWeights` (a bundle's weights from
   * elsewhere: a URL or bytes, checked against the manifest's sha256). Progress events: `{ phase:
   * "download", file, loaded, total }`, then `{ phase: "build" }`, then `{ phase: "ready" }`.
   */
  static async load(source, options = {}) {
    const { onProgress, signal, cache = true, chunkLen, contextLen, backend = "auto", threads, adapters = [], baseWeights } = options;
    checkAdapters(adapters);
    checkInput(source?.chatTemplate, "chatTemplate", "INVALID_MODEL");
    checkInput(source?.config, "config", "INVALID_MODEL");
    const pick = await moduleFor(backend, threads);
    const { module } = pick;
    // What "auto" measured on earlier loads of this device and model (the core picks the one that fits).
    const measured = backend === "auto" && cache ? await readMeasured() : [];
    const aborted = () => signal?.aborted && (signal.reason ?? new DOMException("the load was aborted", "AbortError"));
    let spec;
    const build = async () => {
      spec = undefined;
      spec = await resolveSource(source, { onProgress, signal, cache }, module, { adapters, baseWeights });
      if (aborted()) throw aborted();
      onProgress?.({ phase: "build" });
      const inner = await guard(() =>
        module.Model.load(spec.weights, spec.tokenizer, {
          config: spec.config,
          chatTemplate: spec.chatTemplate,
          chunkLen,
          backend: pick.backend,
          reason: pick.reason,
          contextLen: contextLen ?? spec.contextLen,
          stop: spec.stop ?? [],
          measured,
        }, spec.adapters),
      );
      return inner;
    };
    let inner;
    try {
      inner = await build();
    } catch (e) {
      // Cached files that do not load (a broken deploy cached by an older version, a cache entry gone
      // bad) are dropped, and the load is tried once more from the network.
      const stale = (spec?.fetched ?? []).filter((f) => f.fromCache);
      if (!STALE_CODES.has(e?.code) || !stale.length) throw e;
      await Promise.all(stale.map((f) => forget(f.url)));
      inner = await build();
    }
    if (aborted()) {
      inner.free();
      throw aborted();
    }
    // Only now, with every file parsed and checked, do the downloads go into the cache.
    await Promise.all(spec.fetched.map((f) => f.keep()));
    const fresh = inner.backend.measured;
    if (fresh && cache) await keepMeasured(fresh);
    onProgress?.({ phase: "ready" });
    const model = new Model(inner, spec.manifest, module);
    keepPrefixesOf(model, { manifest: spec.manifest, backend: inner.backend, cache, adapters });
    return model;
  }

  #core() {
    if (!this.#inner) throw new WispError("SESSION_CLOSED", "this model was closed");
    if (!this.alive) throw crashedError();
    return this.#inner;
  }

  /** False once a wasm trap took the model's instance down (its calls then reject with WASM_CRASHED). */
  get alive() {
    return this.#epoch === crashCount();
  }

  /** A core (wasm) agent on this model, from the model's own module (for the agent and the OpenAI surface). */
  coreAgent(options) {
    return new this.#module.Agent(this.#core(), options);
  }

  /** The bundle manifest, when loaded from one. */
  get manifest() {
    return this.#manifest;
  }

  get config() {
    return this.#core().config;
  }

  /** `{ kind: "webgpu" | "cpu", reason, threads }`: where the model runs, why, and (CPU) on how many threads. */
  get backend() {
    return this.#core().backend;
  }

  /** Tokens in the cache: the position of the next token. */
  get length() {
    return this.#core().length;
  }

  get contextLength() {
    return this.#core().contextLength;
  }

  encode(text) {
    checkInput(text, "the text");
    return wrapSync(() => this.#core().encode(text));
  }

  decode(ids) {
    return wrapSync(() => this.#core().decode(Uint32Array.from(ids)));
  }

  /**
   * Renders `[{ role, content }]` with the model's chat template; `tools` go into the system message,
   * Hermes style, when the template has no tools section (docs/guide.md, "The agent").
   */
  renderChat(messages, { tools, addGenerationPrompt = true } = {}) {
    checkInput(messages, "messages");
    checkInput(tools, "tools", "INVALID_TOOL");
    return wrapSync(() => this.#core().renderChat(messages, tools, addGenerationPrompt));
  }

  /**
   * Appends `ids` to the cache; resolves to their logits (`ids.length` rows of the vocabulary size). It
   * does not wait: BUSY while another call is using the model (say, inside a `stream` loop over it).
   */
  async forward(ids) {
    return queueOf(this).run({ wait: false }, () => guard(() => this.#core().forward(Uint32Array.from(ids))));
  }

  /**
   * Generates an answer to `input` (a prompt string, token ids, or `{ messages, tools }` rendered with the
   * chat template) and resolves to `{ text, tokens, finishReason, usage }`. `options`: `maxTokens`
   * (default 256), `temperature` (default 0: greedy), `topK`, `topP`, `minP`, `repetitionPenalty`,
   * `presencePenalty`, `frequencyPenalty`, `seed`, `stop` (strings), `draftTokens` (prompt-lookup drafts
   * checked per pass; the output is the same, 0 turns them off), `signal` (stops between tokens and
   * rejects with an AbortError; what was generated stays in the cache), `onText(delta)`, `responseFormat`
   * (OpenAI's `{ type: "json_schema", json_schema: { name, schema } }` or `{ type: "json_object" }`: the
   * answer is one JSON value valid for the schema, by constrained decoding; a schema that cannot be used
   * rejects with RESPONSE_FORMAT before anything runs).
   */
  async generate(input, options = {}) {
    const stream = this.stream(input, options);
    for await (const delta of stream) options.onText?.(delta.text, delta);
    return stream.result;
  }

  /**
   * The same as `generate`, as an async iterator of `{ text, token }` deltas (UTF-8 safe, stop strings
   * held back until ruled out); `.result` resolves like `generate`'s promise. Leaving the loop early
   * ends the generation with finishReason "cancelled".
   */
  stream(input, options = {}) {
    return streamWithResult((done, fail) => this.#steps(input, options, done, fail));
  }

  #promptIds(input) {
    if (typeof input === "string") return this.encode(input);
    if (Array.isArray(input) || input instanceof Uint32Array) return Uint32Array.from(input);
    if (input && Array.isArray(input.messages)) return this.encode(this.renderChat(input.messages, { tools: input.tools }));
    throw new WispError("INVALID_REQUEST", "generate() takes a prompt string, token ids, or { messages, tools }");
  }

  // Calls `done(result)` at the end, `fail(error)` on an error; left early, the result is "cancelled".
  async *#steps(input, options, done, fail) {
    let settled = false;
    const tokens = [];
    let text = "";
    const started = performance.now();
    let firstAt = 0;
    let generation;
    let release;
    try {
      const { signal } = options;
      const throwIfAborted = () => {
        if (signal?.aborted) throw signal.reason ?? new DOMException("the generation was aborted", "AbortError");
      };
      throwIfAborted();
      checkInput(options.stop, "stop");
      checkInput(options.responseFormat, "responseFormat", "RESPONSE_FORMAT");
      const ids = this.#promptIds(input);
      release = await queueOf(this).acquire(options);
      const request = generationRequest(options);
      generation = await guard(() => this.#core().startGeneration(ids, request));
      for (;;) {
        await breathe();
        throwIfAborted();
        const step = await guard(() => generation.step());
        if (!firstAt) firstAt = performance.now();
        tokens.push(step.token);
        text += step.text;
        if (step.text) yield { text: step.text, token: step.token };
        if (step.finish) {
          settled = true;
          done(this.#result(generation, text, tokens, step.finish, started, firstAt));
          return;
        }
      }
    } catch (e) {
      settled = true;
      fail(e);
      throw e;
    } finally {
      if (!settled) done(this.#result(generation, text, tokens, "cancelled", started, firstAt));
      if (this.alive) generation?.free();
      release?.();
    }
  }

  #result(generation, text, tokens, finishReason, started, firstAt) {
    const now = performance.now();
    const usage = generation
      ? generation.usage
      : { promptTokens: 0, cachedTokens: 0, completionTokens: 0, draftTokens: 0, acceptedDraftTokens: 0, passes: 0 };
    const decodeMs = now - firstAt;
    return {
      text,
      tokens,
      finishReason,
      usage: {
        ...usage,
        ttftMs: firstAt ? firstAt - started : null,
        totalMs: now - started,
        tokensPerSecond: tokens.length > 1 && decodeMs > 0 ? ((tokens.length - 1) * 1000) / decodeMs : null,
      },
    };
  }

  /** Drops the cached tokens from `position` on. */
  seek(position) {
    wrapSync(() => this.#core().seek(position));
  }

  /** Milliseconds per stage of the work since the load or `resetProfile()` (see index.d.ts). */
  profile() {
    return wrapSync(() => this.#core().profile());
  }

  resetProfile() {
    wrapSync(() => this.#core().resetProfile());
  }

  /**
   * Destroys the model's GPU device as a driver reset would, so that an app can exercise its recovery:
   * later calls reject with `GPU_DEVICE_LOST`; close the model and load it again. Returns false on the CPU
   * backend, which has no device.
   */
  loseDevice() {
    return wrapSync(() => this.#core().loseDevice());
  }

  /** Frees the model's GPU device and memory now. */
  close() {
    if (this.alive) this.#inner?.free();
    this.#inner = null;
  }
}

function wrapSync(fn) {
  try {
    return fn();
  } catch (e) {
    rethrow(e);
  }
}
