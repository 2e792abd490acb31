// What the page hands in, checked and shaped before it reaches wasm.
// - Text: a JavaScript string may hold a lone surrogate (half of a UTF-16 pair, say from slicing an emoji),
//   which has no UTF-8 form: wasm-bindgen would quietly turn it into U+FFFD, and the model would read text
//   the page never wrote. Such strings are refused.
// - Shape: values cross into wasm by recursive conversion (serde-wasm-bindgen) and are then walked
//   recursively (schema compilers, the grammar builder). A cyclic object (`schema.properties.self =
//   schema`) never ends, and one nested ~1,000 levels deep overflows the module's stack: wasm32 has no
//   guard page, so that corrupts memory and traps every later call. So cycles are refused here, before
//   anything crosses, and so is nesting deeper than `MAX_DEPTH` or a value with more than `MAX_NODES`
//   parts (an object that shares a child at every level doubles with each level once serialized).
import { WispError } from "./errors.js";

/** The deepest nesting of objects and arrays a value may have (the Rust core checks the same limit). */
export const MAX_DEPTH = 64;
/** The most values (objects, arrays and leaves, shared ones counted at each place) one value may hold. */
export const MAX_NODES = 1_000_000;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const wellFormed = (s) => (typeof s.isWellFormed === "function" ? s.isWellFormed() : !LONE_SURROGATE.test(s));

/**
 * Throws a WispError with `code` (default INVALID_REQUEST) when `value` (a string, or arrays and plain
 * objects of them) cannot cross into wasm as it is: a string (or key) that is not well-formed Unicode, an
 * object that contains itself, nesting deeper than MAX_DEPTH, or more than MAX_NODES values. The message
 * names the first place that fails, as a path from `what`.
 */
export function checkInput(value, what, code = "INVALID_REQUEST") {
  const problem = findProblem(value, what, new Set(), 0, { nodes: 0 });
  if (problem) throw new WispError(code, problem);
}

function findProblem(value, path, ancestors, depth, count) {
  if (++count.nodes > MAX_NODES) return `${path}: the value has more than ${MAX_NODES} parts`;
  if (typeof value === "string") {
    return wellFormed(value) ? null : `${path} holds a lone UTF-16 surrogate, which is not text (String.prototype.toWellFormed() repairs it)`;
  }
  if (value === null || typeof value !== "object" || ArrayBuffer.isView(value) || value instanceof ArrayBuffer) return null;
  if (ancestors.has(value)) return `${path} contains itself (a cycle), which cannot be sent as JSON`;
  if (depth >= MAX_DEPTH) return `${path} is nested more than ${MAX_DEPTH} levels deep`;
  ancestors.add(value);
  try {
    for (const [key, item] of Object.entries(value)) {
      if (!wellFormed(key)) return `a key of ${path} holds a lone UTF-16 surrogate, which is not text (String.prototype.toWellFormed() repairs it)`;
      const problem = findProblem(item, Array.isArray(value) ? `${path}[${key}]` : `${path}.${key}`, ancestors, depth + 1, count);
      if (problem) return problem;
    }
    return null;
  } finally {
    ancestors.delete(value);
  }
}

/**
 * Throws a WispError with `code` unless `value` is undefined or a whole number from `min` to `max`; `name`
 * is the option's name in the message.
 */
export function checkCount(value, name, { min = 1, max = Number.MAX_SAFE_INTEGER, code = "INVALID_REQUEST" } = {}) {
  if (value === undefined) return;
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new WispError(code, `${name} is ${typeof value === "string" ? JSON.stringify(value) : String(value)}; it must be a whole number from ${min} to ${max}`);
  }
}

const SAMPLING_KEYS = {
  temperature: "temperature",
  topK: "top_k",
  topP: "top_p",
  minP: "min_p",
  repetitionPenalty: "repetition_penalty",
  presencePenalty: "presence_penalty",
  frequencyPenalty: "frequency_penalty",
  seed: "seed",
};

/** Tokens a model message may take unless a call says otherwise. */
export const DEFAULT_MAX_TOKENS = 256;

/**
 * The core's request for one generation (a `generate`, an agent's model message, an OpenAI or AI SDK
 * call) from camelCase generation options: `maxTokens` (default 256), the sampling options (greedy unless
 * `temperature` says otherwise: the package's one sampling default), `stop`, `draftTokens`,
 * `responseFormat`; options left undefined take `defaults`' values.
 */
export function generationRequest(options, defaults = {}) {
  const given = { ...defaults };
  for (const [key, value] of Object.entries(options)) if (value !== undefined) given[key] = value;
  return {
    sampling: samplingParams(given),
    maxTokens: given.maxTokens ?? DEFAULT_MAX_TOKENS,
    stop: given.stop ?? [],
    draftTokens: given.draftTokens,
    responseFormat: given.responseFormat,
    // Fresh entropy for a call without a seed of its own.
    seed: crypto.getRandomValues(new Uint32Array(1))[0],
  };
}

/** The core's sampling parameters from generation options (greedy unless `temperature` says otherwise). */
export function samplingParams(options) {
  const params = { temperature: 0 };
  for (const [js, rust] of Object.entries(SAMPLING_KEYS)) {
    if (options[js] !== undefined) params[rust] = options[js];
  }
  return params;
}
