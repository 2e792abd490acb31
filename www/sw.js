// The demo's service worker: after one visit the app, the wasm package and the models are stored, so the
// demo works with no network: wisp-agent (its manifest, adapter, template and 98 MB base) where the server
// has its base, and wisp-mini, the fallback, always. App files are network-first (a rebuilt pkg/ shows up at once, the
// cache is the fallback); model files go straight into the package's own model cache ("wisp-models-v1"),
// which Model.load revalidates and falls back to offline, so they are stored once. Registered with scope "/" (the server
// sends Service-Worker-Allowed), because the model's worker script lives in /pkg/, outside /www/, and a
// dedicated worker is only controlled when its own URL is in scope.
const APP_CACHE = "wisp-demo-v1";
const MODEL_CACHE = "wisp-models-v1";
const ROOT = new URL("../", self.location.href);
const APP = ["www/", "www/index.html", "www/app.js", "www/tools.js", "www/style.css", "www/manifest.webmanifest", "www/icon.svg"];
const AGENT = "models/wisp-agent/manifest.json";
const FALLBACK = "models/wisp-mini/manifest.json";

async function fetchOk(url) {
  const response = await fetch(url, { cache: "no-cache" });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response;
}

// pkg/index.js's RELAXED_PROBE (a classic service worker cannot import the package's ES modules): where
// it validates, the page loads the relaxed-SIMD builds (`*_relaxed*`), and the plain ones elsewhere.
const RELAXED_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 61, 1, 59, 0,
  ...[0, 1, 2].flatMap(() => [253, 12, ...new Array(16).fill(0)]), 253, 133, 2, 11,
]);

async function precacheApp() {
  // pkg/files.json lists the package's files (build-pkg.sh writes it): the glue imports snippets whose
  // paths change with every build. Of each module only the build this browser runs.
  const files = await (await fetchOk(new URL("pkg/files.json", ROOT))).json();
  const relaxed = WebAssembly.validate(RELAXED_PROBE);
  const unused = (f) => /^wisp_core/.test(f) && f.includes("_relaxed") !== relaxed;
  const pkg = files.filter((f) => /\.(js|wasm)$/.test(f) && !unused(f)).map((f) => `pkg/${f}`);
  const cache = await caches.open(APP_CACHE);
  await cache.addAll([...APP, ...pkg].map((path) => new URL(path, ROOT).href));
}

async function precacheModel(path) {
  const cache = await caches.open(MODEL_CACHE);
  const manifestUrl = new URL(path, ROOT);
  const manifest = await (await fetchOk(manifestUrl)).clone().json();
  // `files.adapters` is a list; the other entries are single files.
  const urls = [manifestUrl, ...Object.values(manifest.files).flat().map((f) => new URL(f.path, manifestUrl))];
  for (const url of urls) {
    if (!(await cache.match(url.href))) await cache.put(url.href, await fetchOk(url));
  }
}

// wisp-agent only where its base is served (the page then runs it; else it runs the fallback).
async function precacheAgent() {
  const base = await fetch(new URL("models/wisp-agent/SmolLM2-135M-Instruct.Q4_1.gguf", ROOT), { method: "HEAD" });
  if (base.ok) await precacheModel(AGENT);
}

self.addEventListener("install", (event) => {
  event.waitUntil(Promise.all([precacheApp(), precacheModel(FALLBACK), precacheAgent()]).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (event) => {
  event.waitUntil(self.clients.claim());
});

async function respond(request) {
  // The package's own requests ("no-store") revalidate its model cache; it falls back to that cache itself.
  if (request.cache !== "no-store") {
    const models = await caches.open(MODEL_CACHE);
    const stored = await models.match(request.url);
    if (stored) return stored;
  }
  const app = await caches.open(APP_CACHE);
  try {
    const response = await fetch(request);
    if (response.ok && (await app.match(request.url))) await app.put(request.url, response.clone());
    return response;
  } catch (e) {
    const fallback = await app.match(request.url);
    if (fallback) return fallback;
    throw e;
  }
}

self.addEventListener("fetch", (event) => {
  const { request } = event;
  if (request.method !== "GET" || !request.url.startsWith(ROOT.origin + "/")) return;
  event.respondWith(respond(request));
});
