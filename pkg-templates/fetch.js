// Downloads for model loading: streamed with progress, kept in the Cache API so that a second load works
// offline, checked against a sha256 when one is given, and cancellable with an AbortSignal.
import { WispError } from "./errors.js";

const CACHE_NAME = "wisp-models-v1";

function abortError(signal) {
  const reason = signal?.reason;
  if (reason instanceof Error && reason.name === "AbortError") return reason;
  return new DOMException("the load was aborted", "AbortError");
}

async function openCache() {
  try {
    return typeof caches === "undefined" ? null : await caches.open(CACHE_NAME);
  } catch {
    // Opaque origins and some private modes have no Cache API: load without it.
    return null;
  }
}

async function readWithProgress(response, url, onProgress, signal) {
  const total = Number(response.headers.get("content-length")) || 0;
  const reader = response.body.getReader();
  const chunks = [];
  let loaded = 0;
  onProgress?.({ phase: "download", file: url, loaded, total });
  for (;;) {
    if (signal?.aborted) {
      await reader.cancel().catch(() => {});
      throw abortError(signal);
    }
    let step;
    try {
      step = await reader.read();
    } catch (e) {
      const code = total && loaded < total ? "FETCH_TRUNCATED" : "FETCH_FAILED";
      const of = total ? ` of ${total}` : "";
      throw new WispError(code, `download of ${url} broke off after ${loaded}${of} bytes: ${e?.message ?? e}`);
    }
    if (step.done) break;
    chunks.push(step.value);
    loaded += step.value.byteLength;
    onProgress?.({ phase: "download", file: url, loaded, total });
  }
  if (total && loaded !== total) {
    throw new WispError("FETCH_TRUNCATED", `download of ${url} is truncated: ${loaded} of ${total} bytes`);
  }
  const bytes = new Uint8Array(loaded);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  return bytes;
}

async function sha256Hex(bytes) {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * The bytes at `url`: from the cache when present, else downloaded (and cached). With `sha256`, the bytes
 * must match it, or the load fails with HASH_MISMATCH and nothing is cached.
 */
export async function fetchBytes(url, { onProgress, signal, sha256, cache = true } = {}) {
  const href = new URL(url, globalThis.location?.href).href;
  if (signal?.aborted) throw abortError(signal);
  const store = cache ? await openCache() : null;
  const cached = store ? await store.match(href) : undefined;
  let bytes;
  let fromCache = false;
  if (cached) {
    bytes = await readWithProgress(cached, href, onProgress, signal);
    fromCache = true;
  } else {
    let response;
    try {
      response = await fetch(href, { signal });
    } catch (e) {
      if (signal?.aborted) throw abortError(signal);
      throw new WispError("FETCH_FAILED", `could not fetch ${href}: ${e?.message ?? e}`);
    }
    if (!response.ok) throw new WispError("FETCH_FAILED", `could not fetch ${href}: HTTP ${response.status}`);
    bytes = await readWithProgress(response, href, onProgress, signal);
  }
  if (sha256) {
    const got = await sha256Hex(bytes);
    if (got !== sha256.toLowerCase()) {
      if (fromCache) await store.delete(href);
      throw new WispError("HASH_MISMATCH", `${href} has sha256 ${got}, expected ${sha256}`);
    }
  }
  if (store && !fromCache) {
    const headers = { "content-type": "application/octet-stream", "content-length": String(bytes.byteLength) };
    await store.put(href, new Response(bytes, { headers })).catch(() => {});
  }
  return bytes;
}

/** Forgets every cached model file. */
export async function clearModelCache() {
  if (typeof caches !== "undefined") await caches.delete(CACHE_NAME);
}
