// The demo's service worker: after one visit the app, the wasm package and the bundled model are stored,
// so the demo works with no network. App files are network-first (a rebuilt pkg/ shows up at once, the
// cache is the fallback); model files go straight into the package's own model cache ("wisp-models-v1"),
// where Model.load looks before fetching, so they are stored once. Registered with scope "/" (the server
// sends Service-Worker-Allowed), because the model's worker script lives in /pkg/, outside /www/, and a
// dedicated worker is only controlled when its own URL is in scope.
const APP_CACHE = "wisp-demo-v1";
const MODEL_CACHE = "wisp-models-v1";
const ROOT = new URL("../", self.location.href);
const APP = ["www/", "www/index.html", "www/app.js", "www/tools.js", "www/style.css", "www/manifest.webmanifest", "www/icon.svg"];
const MODEL = "models/wisp-mini/manifest.json";

async function fetchOk(url) {
  const response = await fetch(url, { cache: "no-cache" });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response;
}

async function precacheApp() {
  // pkg/files.json lists the package's files (build-pkg.sh writes it): the glue imports snippets whose
  // paths change with every build.
  const files = await (await fetchOk(new URL("pkg/files.json", ROOT))).json();
  const pkg = files.filter((f) => /\.(js|wasm)$/.test(f)).map((f) => `pkg/${f}`);
  const cache = await caches.open(APP_CACHE);
  await cache.addAll([...APP, ...pkg].map((path) => new URL(path, ROOT).href));
}

async function precacheModel() {
  const cache = await caches.open(MODEL_CACHE);
  const manifestUrl = new URL(MODEL, ROOT);
  const manifest = await (await fetchOk(manifestUrl)).clone().json();
  const urls = [manifestUrl, ...Object.values(manifest.files).map((f) => new URL(f.path, manifestUrl))];
  for (const url of urls) {
    if (!(await cache.match(url.href))) await cache.put(url.href, await fetchOk(url));
  }
}

self.addEventListener("install", (event) => {
  event.waitUntil(Promise.all([precacheApp(), precacheModel()]).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (event) => {
  event.waitUntil(self.clients.claim());
});

async function respond(request) {
  const models = await caches.open(MODEL_CACHE);
  const stored = await models.match(request.url);
  if (stored) return stored;
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
