// Downloads for model loading: streamed with progress, kept in the Cache API so that a second load works
// offline, checked against a sha256 (and size) when the manifest gives them, and cancellable with an
// AbortSignal.
//
// What the cache may serve: a file whose sha256 the manifest gives is served from the cache when the
// cached bytes match it (the hash pins the content); any other file is revalidated with the server first
// (a conditional request on the ETag / Last-Modified it came with) and served from the cache only when the
// server says it is unchanged or cannot be reached (offline); a server that sends neither is not asked. A manifest is always asked of the server
// first (`prefer: "network"`), so that a model update reaches returning users. Nothing is cached until the
// caller says it parsed (`keep()`), so a broken deploy never sticks.
import { WispError } from "./errors.js";

const CACHE_NAME = "wisp-models-v1";
// Response headers kept with a cached file, for revalidation.
const VALIDATORS = ["etag", "last-modified"];

/**
 * The most bytes of model files one load can take: the weights go into the wasm32 memory (at most 4 GiB
 * in every engine) a band at a time, in kernel layouts about as large as the file, beside the key/value
 * cache and the working buffers (half a GiB kept for those). A model beyond it is refused with
 * MODEL_TOO_LARGE before its bytes are downloaded, rather than crashing the module once they are.
 */
export const MAX_MODEL_BYTES = 4 * 2 ** 30 - 2 ** 29;

const mib = (bytes) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;

/** Refuses `bytes` of model files (MODEL_TOO_LARGE, with the numbers): `what` names them. */
export function checkModelBytes(bytes, what) {
  if (bytes > MAX_MODEL_BYTES) {
    throw new WispError(
      "MODEL_TOO_LARGE",
      `${what} ${bytes.toLocaleString("en")} bytes (${mib(bytes)}); a model's files must fit in the 4 GiB wasm32 memory beside its cache and working buffers: at most ${mib(MAX_MODEL_BYTES)}`,
    );
  }
}

function abortError(signal) {
  const reason = signal?.reason;
  if (reason instanceof Error && reason.name === "AbortError") return reason;
  return new DOMException("the load was aborted", "AbortError");
}

/** The cache of model files (null where the page has no Cache API). */
export async function openCache() {
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

// Why `bytes` are not the file the manifest describes, if they are not.
async function mismatch(bytes, { sha256, size }) {
  if (size !== undefined && bytes.byteLength !== size) return `has ${bytes.byteLength} bytes; the manifest says ${size}`;
  if (sha256) {
    const got = await sha256Hex(bytes);
    if (got !== sha256.toLowerCase()) return `has sha256 ${got}, expected ${sha256}`;
  }
  return null;
}

/** Rejects with HASH_MISMATCH when `bytes` (given, not fetched) are not the file a manifest entry describes. */
export async function checkBytes(bytes, file, what) {
  const why = await mismatch(bytes, file);
  if (why) throw new WispError("HASH_MISMATCH", `${what} ${why}`);
}

// A network request for `href`: the response, or null when the network cannot be reached (offline, DNS, a
// refused connection). `headers`: a conditional request's validators.
async function request(href, signal, headers = {}) {
  try {
    // "no-store": the validators are ours; the HTTP cache must neither answer nor keep a second copy.
    return await fetch(href, { signal, headers, cache: "no-store" });
  } catch (e) {
    if (signal?.aborted) throw abortError(signal);
    return null;
  }
}

/** A URL for `value`: relative to the page; in Node (no page) a path relative to the working directory. */
export function resolveUrl(value) {
  if (globalThis.location || value instanceof URL || /^[a-z][a-z0-9+.-]*:/i.test(String(value))) {
    return new URL(value, globalThis.location?.href);
  }
  return new URL(String(value), `file://${globalThis.process?.cwd?.() ?? ""}/`);
}

/** The bytes of a `file:` URL, read from disk (Node; its fetch reads no `file:` URLs). */
export async function readFileUrl(url) {
  // A name in a variable: bundlers for the browser must not try to resolve a Node module.
  const fs = "node:fs/promises";
  const { readFile } = await import(/* @vite-ignore */ fs);
  try {
    return new Uint8Array(await readFile(url));
  } catch (e) {
    throw new WispError("FETCH_FAILED", `could not read ${url.href}: ${e?.message ?? e}`);
  }
}

/**
 * The bytes at `url`, resolving to `{ bytes, fromCache, keep }`: `keep()` stores freshly downloaded bytes in
 * the cache (call it once they parsed), `fromCache` says they came from there. With `sha256` and `size` the
 * bytes must match them, or the load fails with HASH_MISMATCH (a cached copy that does not match is
 * dropped and downloaded again). `prefer: "network"` asks the server first and falls back to the cache only
 * when the server cannot be reached; `cache: false` neither reads nor writes the cache.
 */
export async function fetchFile(url, { onProgress, signal, sha256, size, cache = true, prefer = "cache" } = {}) {
  const resolved = resolveUrl(url);
  const href = resolved.href;
  if (signal?.aborted) throw abortError(signal);
  if (resolved.protocol === "file:") {
    const bytes = await readFileUrl(resolved);
    const why = await mismatch(bytes, { sha256, size });
    if (why) throw new WispError("HASH_MISMATCH", `${href} ${why}`);
    return { bytes, fromCache: false, keep: async () => {} };
  }
  const store = cache ? await openCache() : null;
  const cached = store ? await store.match(href) : undefined;
  const fromCache = async () => ({ bytes: await readWithProgress(cached, href, onProgress, signal), fromCache: true, keep: async () => {} });
  let response;
  if (cached && sha256 && prefer !== "network") {
    const hit = await fromCache();
    if (!(await mismatch(hit.bytes, { sha256, size }))) return hit;
    await store.delete(href);
    response = await request(href, signal);
  } else if (cached) {
    const validators = {};
    const etag = cached.headers.get("etag");
    const modified = cached.headers.get("last-modified");
    if (etag) validators["if-none-match"] = etag;
    if (modified) validators["if-modified-since"] = modified;
    // A server that gave no validators cannot be asked cheaply: its files are served from the cache (a copy
    // that then fails to parse is dropped and downloaded again by the loader).
    if (!etag && !modified && prefer !== "network") response = null;
    else response = await request(href, signal, validators);
    // Unchanged, or offline: the cached copy. (It still has to match the manifest.)
    if (!response || response.status === 304) {
      const hit = await fromCache();
      const why = await mismatch(hit.bytes, { sha256, size });
      if (!why) return hit;
      await store.delete(href);
      if (!response) throw new WispError("HASH_MISMATCH", `the cached ${href} ${why}, and the server cannot be reached`);
      response = await request(href, signal);
    }
  } else {
    response = await request(href, signal);
  }
  if (!response) throw new WispError("FETCH_FAILED", `could not fetch ${href}: the network cannot be reached`);
  if (!response.ok) throw new WispError("FETCH_FAILED", `could not fetch ${href}: HTTP ${response.status}`);
  const declared = Number(response.headers.get("content-length"));
  if (size !== undefined && declared && declared !== size) {
    await response.body?.cancel().catch(() => {});
    throw new WispError("HASH_MISMATCH", `${href} has ${declared} bytes; the manifest says ${size}`);
  }
  if (declared > MAX_MODEL_BYTES) {
    await response.body?.cancel().catch(() => {});
    checkModelBytes(declared, `${href} has`);
  }
  const bytes = await readWithProgress(response, href, onProgress, signal);
  const why = await mismatch(bytes, { sha256, size });
  if (why) throw new WispError("HASH_MISMATCH", `${href} ${why}`);
  const headers = { "content-type": "application/octet-stream", "content-length": String(bytes.byteLength) };
  for (const name of VALIDATORS) {
    const value = response.headers.get(name);
    if (value) headers[name] = value;
  }
  const keep = async () => {
    if (store) await store.put(href, new Response(bytes, { headers })).catch(() => {});
  };
  return { bytes, fromCache: false, keep };
}

/** Drops `url` from the cache (a cached file that did not parse). */
export async function forget(url) {
  const store = await openCache();
  await store?.delete(resolveUrl(url).href);
}

// `backend: "auto"`'s measurements (which backend was faster, per device and model: the core's key),
// kept beside the model files so that a later load builds only that backend. The key is a URL that is
// never fetched (`.invalid` cannot resolve).
const MEASURED_URL = "https://wisp.invalid/backend-measurements.json";
const MAX_MEASURED = 16;
const BACKEND_KINDS = new Set(["webgpu", "cpu"]);

/** The measurements kept, newest first; a missing or damaged entry reads as none. */
export async function readMeasured() {
  const store = await openCache();
  try {
    const kept = await (await store?.match(MEASURED_URL))?.json();
    if (!Array.isArray(kept)) return [];
    // Only well-formed entries, with exactly the fields the core takes.
    return kept
      .filter((m) => typeof m?.key === "string" && BACKEND_KINDS.has(m.kind) && typeof m.figures === "string" && typeof m.at === "string")
      .map(({ key, kind, figures, at }) => ({ key, kind, figures, at }));
  } catch {
    return [];
  }
}

/** Keeps a load's measurement (`model.backend.measured`), dated now, in place of an older one of its key. */
export async function keepMeasured({ key, kind, figures }) {
  const store = await openCache();
  if (!store) return;
  const older = (await readMeasured()).filter((m) => m.key !== key);
  const list = [{ key, kind, figures, at: new Date().toISOString() }, ...older].slice(0, MAX_MEASURED);
  await store.put(MEASURED_URL, new Response(JSON.stringify(list), { headers: { "content-type": "application/json" } })).catch(() => {});
}

/** Forgets every cached model file, and the backend measurements. */
export async function clearModelCache() {
  if (typeof caches !== "undefined") await caches.delete(CACHE_NAME);
}
