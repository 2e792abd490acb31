// What the page hands in, checked and shaped before it reaches wasm. A JavaScript string may hold a lone surrogate
// (half of a UTF-16 pair, say from slicing an emoji), which has no UTF-8 form: wasm-bindgen would quietly
// turn it into U+FFFD, and the model would read text the page never wrote. Such strings are refused.
import { WispError } from "./errors.js";

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const wellFormed = (s) => (typeof s.isWellFormed === "function" ? s.isWellFormed() : !LONE_SURROGATE.test(s));

/**
 * Throws a WispError with `code` (default INVALID_REQUEST) naming the first string in `value` (a string,
 * or one inside arrays and plain objects, keys included) that is not well-formed Unicode.
 */
export function checkText(value, what, code = "INVALID_REQUEST") {
  const bad = findIllFormed(value, what, new Set());
  if (bad) {
    throw new WispError(code, `${bad} holds a lone UTF-16 surrogate, which is not text (String.prototype.toWellFormed() repairs it)`);
  }
}

function findIllFormed(value, path, seen) {
  if (typeof value === "string") return wellFormed(value) ? null : path;
  if (value === null || typeof value !== "object" || ArrayBuffer.isView(value) || seen.has(value)) return null;
  seen.add(value);
  for (const [key, item] of Object.entries(value)) {
    if (!wellFormed(key)) return `a key of ${path}`;
    const bad = findIllFormed(item, Array.isArray(value) ? `${path}[${key}]` : `${path}.${key}`, seen);
    if (bad) return bad;
  }
  return null;
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

/** The core's sampling parameters from generation options (greedy unless `temperature` says otherwise). */
export function samplingParams(options) {
  const params = { temperature: 0 };
  for (const [js, rust] of Object.entries(SAMPLING_KEYS)) {
    if (options[js] !== undefined) params[rust] = options[js];
  }
  return params;
}
