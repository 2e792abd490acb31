// The public entry of the wisp-agent package: loads the wasm core once and wraps it in a small API whose
// errors are all `WispError`s with a stable `code`.
import initCore, * as core from "./wisp_core.js";

let ready = null;

/**
 * Loads and instantiates the wasm module (once; later calls return the same promise). Bundlers find the
 * `.wasm` through the `new URL(..., import.meta.url)` below; pass `wasmUrl` to serve it from elsewhere.
 */
export function init(options = {}) {
  if (!ready) {
    const wasm = options.wasmUrl ?? new URL("./wisp_core_bg.wasm", import.meta.url);
    ready = initCore({ module_or_path: wasm }).catch((e) => {
      ready = null;
      throw new WispError("WASM_LOAD", `could not load the Wisp wasm module from ${wasm}: ${e?.message ?? e}`);
    });
  }
  return ready;
}

/** Errors thrown by this package: `code` is stable and documented in README. */
export class WispError extends Error {
  constructor(code, message) {
    super(message);
    this.name = "WispError";
    this.code = code;
  }
}

// The core rejects with plain Errors named "WispError" that carry a code; give them our class.
function rethrow(e) {
  if (e instanceof WispError) throw e;
  if (e && e.name === "WispError" && typeof e.code === "string") throw new WispError(e.code, e.message);
  throw new WispError("INTERNAL", `unexpected failure inside Wisp: ${e?.message ?? e}`);
}

async function call(fn) {
  await init();
  try {
    return await fn();
  } catch (e) {
    rethrow(e);
  }
}

/** Describes the page's WebGPU adapter; rejects with code `WEBGPU_UNAVAILABLE` (and why) when there is none. */
export function adapterInfo() {
  return call(() => core.adapterInfo());
}

async function fetchBytes(url) {
  let response;
  try {
    response = await fetch(url);
  } catch (e) {
    throw new WispError("FETCH_FAILED", `could not fetch ${url}: ${e?.message ?? e}`);
  }
  if (!response.ok) throw new WispError("FETCH_FAILED", `could not fetch ${url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
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

  constructor(inner) {
    this.#inner = inner;
  }

  /** `source`: the model's bytes (Uint8Array, ArrayBuffer) or a URL to fetch them from. */
  static async create(source) {
    const bytes = toBytes(source) ?? (await fetchBytes(source));
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
    this.#inner?.free();
    this.#inner = null;
  }
}
