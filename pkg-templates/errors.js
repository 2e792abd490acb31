/** Errors thrown by this package: `code` is stable and documented in docs/errors.md. */
export class WispError extends Error {
  constructor(code, message) {
    super(message);
    this.name = "WispError";
    this.code = code;
  }
}

/**
 * Every `code` a WispError can carry: the core's (`src/error.rs`) and the ones only this JavaScript layer
 * raises. `tests/node/errors.test.mjs` checks it against the core, `index.d.ts` and both catalogues.
 */
export const ERROR_CODES = Object.freeze([
  "WEBGPU_UNAVAILABLE",
  "GPU_SHADER_COMPILE",
  "GPU_VALIDATION",
  "GPU_OUT_OF_MEMORY",
  "GPU_DEVICE_LOST",
  "GPU_INTERNAL",
  "INVALID_MODEL",
  "INVALID_INPUT",
  "INVALID_REQUEST",
  "FETCH_FAILED",
  "FETCH_TRUNCATED",
  "HASH_MISMATCH",
  "INVALID_MANIFEST",
  "INVALID_WEIGHTS",
  "UNSUPPORTED_WEIGHTS",
  "INVALID_ADAPTER",
  "CONTEXT_OVERFLOW",
  "CONTEXT_POLICY",
  "MODEL_TOO_LARGE",
  "BUSY",
  "INVALID_TOOL",
  "DUPLICATE_TOOL",
  "UNKNOWN_TOOL",
  "INVALID_TOOL_ARGUMENTS",
  "TOOL_RESULT_NOT_JSON",
  "TOOL_GRAMMAR",
  "RESPONSE_FORMAT",
  "ALL_TOKENS_MASKED",
  "SESSION_CLOSED",
  "WORKER_FAILED",
  "WASM_LOAD",
  "WASM_CRASHED",
  "APPROVAL_FAILED",
  "INTERNAL",
]);

// Crashes of this realm's wasm instances. A trap (a stack overflow, an out-of-bounds access, the
// `unreachable` of a panic) unwinds out of the module without restoring its stack pointer or its locks, so
// the instance that trapped cannot be trusted again: every model and agent of this realm's instances so far
// is marked dead (`crashes` moved on since they were made) and refuses further calls, and the next load
// instantiates the modules afresh (`onCrash`). Which instance trapped is not known from the error, so all of
// them are left behind; a trap is a bug in Wisp, never a normal path.
let crashes = 0;
const crashListeners = [];

/** How many times a wasm instance of this realm has trapped. */
export const crashCount = () => crashes;

// wasm-bindgen's glue keeps its instance in module state, so a fresh instance after a crash needs a module
// record of its own: the package's file `path` under another URL. (Bundlers see only the static imports of
// the glue; a bundled page whose module crashed gets WASM_LOAD from the next load and recovers on a reload.)
export function freshImport(path) {
  const url = new URL(path, import.meta.url);
  url.searchParams.set("instance", String(crashes));
  return import(/* @vite-ignore */ url.href);
}

/** Runs `listener` after each trap (index.js forgets its instances there). */
export function onCrash(listener) {
  crashListeners.push(listener);
}

/** The error for a call on a model, agent or session whose wasm instance crashed. */
export function crashedError() {
  return new WispError("WASM_CRASHED", "the Wisp wasm module crashed earlier, and this object went with it: load the model again");
}

/**
 * Anything a call into Wisp threw, as what the page gets: `WispError`s and AbortErrors as they are, the core's
 * coded errors as `WispError`s, a wasm trap as WASM_CRASHED (after marking this realm's instances dead), and
 * anything else as INTERNAL.
 */
export function toWispError(e) {
  if (e instanceof WispError || e?.name === "AbortError" || e?.name === "TimeoutError") return e;
  if (typeof WebAssembly === "object" && e instanceof WebAssembly.RuntimeError) {
    crashes++;
    for (const listener of crashListeners) listener();
    return new WispError("WASM_CRASHED", `the Wisp wasm module crashed (${e.message}); load the model again`);
  }
  if (e?.name === "WispError" && typeof e.code === "string") return new WispError(e.code, e.message);
  return new WispError("INTERNAL", `unexpected failure inside Wisp: ${e?.message ?? e}`);
}
