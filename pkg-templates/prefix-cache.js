// An agent's system + tools prefix, as the keys and values the model computed for it, kept in the Cache
// API beside the model files: the first run of a later page load restores it instead of prefilling it
// (docs/guide.md, "The agent"). Kept only for models loaded from a bundle with `cache` on, whose weights
// and adapters the manifest pins by sha256: the key names the bytes that made the keys and values, and the
// prefix's tokens. The core refuses bytes of another Wisp version, backend or model shape.
import { openCache } from "./fetch.js";

const PREFIX_URL = "https://wisp.invalid/prefix/";
const INDEX_URL = "https://wisp.invalid/prefixes.json";
// Newest first. A prefix is 46 KB a token for SmolLM2-135M (8.9 MB for wisp-agent with the demo's six tools).
const MAX_PREFIXES = 4;

// Per model: its identity, and the prefixes this page already restored or saved.
const models = new WeakMap();

/**
 * Marks a loaded model as one whose agents keep their prefixes: `manifest` its bundle's (none for other
 * sources), `adapters` the adapters given as load options (their bytes are pinned by no sha256).
 */
export function keepPrefixesOf(model, { manifest, backend, cache, adapters = [] }) {
  const f = manifest?.files;
  const pinned = [f?.weights, ...(f?.adapters ?? [])].every((file) => typeof file?.sha256 === "string");
  if (!cache || !f || !pinned || adapters.length) return;
  const identity = JSON.stringify([f.weights.sha256, (f.adapters ?? []).map((a) => [a.sha256, a.scale ?? 1]), backend.kind]);
  models.set(model, { identity, known: new Set() });
}

async function keyOf(identity, tokens) {
  // Secure contexts only (https, localhost, extensions); elsewhere nothing is kept.
  if (!globalThis.crypto?.subtle) return null;
  const head = new TextEncoder().encode(`${identity}\n`);
  const ids = new Uint8Array(tokens.buffer, tokens.byteOffset, tokens.byteLength);
  const all = new Uint8Array(head.length + ids.length);
  all.set(head);
  all.set(ids, head.length);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", all));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function readIndex(store) {
  try {
    const list = await (await store.match(INDEX_URL))?.json();
    return Array.isArray(list) ? list.filter((k) => typeof k === "string" && /^[0-9a-f]{64}$/.test(k)) : [];
  } catch {
    return [];
  }
}

/**
 * The prefix cache of `model`'s agents, or null when its prefixes are not kept. `core`: the agent's core
 * (wasm or worker), whose calls may return promises.
 */
export function prefixCacheFor(model) {
  const entry = models.get(model);
  if (!entry) return null;
  const { identity, known } = entry;
  return {
    /**
     * Before the first message of a run, holding the model: restores this agent's prefix when the model's
     * cache does not begin with it and a kept one exists. Returns the prefix's key (null: not kept here).
     * Never rejects: failing to read or restore a prefix only costs its prefill.
     */
    async restore(core) {
      try {
        const { tokens, cached } = await core.prefix();
        const key = await keyOf(identity, tokens);
        if (!key || cached) return key;
        const store = await openCache();
        const kept = await store?.match(PREFIX_URL + key).catch(() => undefined);
        const bytes = kept && new Uint8Array(await kept.arrayBuffer().catch(() => new ArrayBuffer(0)));
        if (!bytes?.length) return key;
        try {
          await core.restoreCache(bytes);
          known.add(key);
        } catch {
          // Made by another version or backend, or damaged: prefilled again, and kept anew after the run.
          await store.delete(PREFIX_URL + key).catch(() => {});
        }
        return key;
      } catch {
        return null;
      }
    },

    /**
     * After the first message of a run, still holding the model (its cache then begins with the prefix):
     * keeps the prefix under `key` unless this page already restored or kept it. The write goes on in
     * the background; a page whose storage refuses it just prefills again next time. Never rejects.
     */
    async save(core, key) {
      if (!key || known.has(key)) return;
      const bytes = await Promise.resolve()
        .then(() => core.savePrefix())
        .catch(() => undefined);
      if (!bytes) return;
      known.add(key);
      const store = await openCache();
      if (!store) return;
      const write = async () => {
        await store.put(PREFIX_URL + key, new Response(bytes, { headers: { "content-type": "application/octet-stream" } }));
        const older = (await readIndex(store)).filter((k) => k !== key);
        const list = [key, ...older];
        await Promise.all(list.slice(MAX_PREFIXES).map((k) => store.delete(PREFIX_URL + k)));
        await store.put(INDEX_URL, new Response(JSON.stringify(list.slice(0, MAX_PREFIXES)), { headers: { "content-type": "application/json" } }));
      };
      write().catch(() => {});
    },
  };
}
