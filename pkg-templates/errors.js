/** Errors thrown by this package: `code` is stable; the catalogue is in README (Error codes). */
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
  "CONTEXT_OVERFLOW",
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
  "INTERNAL",
]);
