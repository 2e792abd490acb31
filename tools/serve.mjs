// A static file server for the demo and the browser tests: the repository root over http on 127.0.0.1
// (WebGPU and the Cache API need a secure context, which localhost is; file:// is not).
//   node tools/serve.mjs [port] [--isolated]      serves until interrupted
// --isolated sends COOP/COEP, so that pages are cross-origin isolated: they get SharedArrayBuffer, and
// Wisp's CPU backend (and onnxruntime-web's wasm backend) run on several threads.
import { createServer } from "node:http";
import { readFile, stat } from "node:fs/promises";
import { extname, join, normalize, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".webmanifest": "application/manifest+json",
  ".wasm": "application/wasm",
  ".svg": "image/svg+xml",
  ".png": "image/png",
};

// Cross-origin isolation: a top-level page of its own browsing context group (COOP) that loads nothing
// cross-origin without consent (COEP). Everything here is same-origin, so nothing else changes.
const ISOLATION = {
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-embedder-policy": "require-corp",
};

async function handle(root, isolated, req, res) {
  const path = decodeURIComponent(new URL(req.url, "http://localhost").pathname);
  let file = normalize(join(root, path));
  if (file !== root && !file.startsWith(root + sep)) {
    res.writeHead(403).end("forbidden");
    return;
  }
  try {
    let info = await stat(file);
    if (info.isDirectory()) {
      file = join(file, "index.html");
      info = await stat(file);
    }
    // Validators as static servers send them, so that clients (Wisp's model cache) can revalidate.
    const etag = `"${info.size.toString(16)}-${Math.floor(info.mtimeMs).toString(16)}"`;
    const common = { etag, "last-modified": info.mtime.toUTCString(), "cache-control": "no-cache", ...(isolated ? ISOLATION : {}) };
    if (req.headers["if-none-match"] === etag) {
      res.writeHead(304, common).end();
      return;
    }
    const body = await readFile(file);
    const headers = {
      "content-type": TYPES[extname(file)] ?? "application/octet-stream",
      "content-length": body.length,
      ...common,
    };
    // The demo's service worker controls the whole origin: its model worker runs from /pkg/.
    if (path === "/www/sw.js") headers["service-worker-allowed"] = "/";
    res.writeHead(200, headers);
    res.end(req.method === "HEAD" ? undefined : body);
  } catch {
    res.writeHead(404, { "content-type": "text/plain" }).end(`not found: ${path}`);
  }
}

/**
 * Starts the server for `root` (default: the repository); port 0 picks a free one; `isolated` sends the
 * cross-origin isolation headers. Resolves to { url, close }; close also drops open connections.
 */
export function serve(port = 0, root = ROOT, { isolated = false } = {}) {
  const dir = resolve(root);
  const server = createServer((req, res) => {
    handle(dir, isolated, req, res).catch(() => res.writeHead(500).end());
  });
  return new Promise((resolveStart, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      const url = `http://127.0.0.1:${server.address().port}`;
      const close = () =>
        new Promise((done) => {
          server.close(done);
          server.closeAllConnections();
        });
      resolveStart({ url, close });
    });
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const isolated = args.includes("--isolated");
  const port = args.find((a) => !a.startsWith("--"));
  const { url } = await serve(Number(port ?? 8080), ROOT, { isolated });
  console.log(`Wisp demo: ${url}/www/  (WebGPU if the browser has it, otherwise the CPU backend` +
    `${isolated ? ", cross-origin isolated: on several threads" : ""})`);
}
