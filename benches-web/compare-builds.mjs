// Two builds of the package in one Chromium page, alternating run by run: the check that a build change
// (compiler flags, how the modules are linked) or a loading change leaves speed and tokens as they were.
// Wisp's CPU backend on one thread, greedy, 128 tokens after a ~235-token prompt (the first chapters of
// run.mjs's text); each round runs both builds, in alternating order. Reports the medians of the pairwise
// ratios (B/A), the wasm heap after each build's load, and whether the greedy tokens agree.
//
//   node benches-web/compare-builds.mjs PKG_A PKG_B MODEL.gguf [--rounds 16] [--plain] [--loads] [--adapter LORA.gguf]
//
// PKG_A, PKG_B: built pkg/ folders (copy pkg/ aside before rebuilding). --plain: the plain-SIMD modules
// (`init({ relaxedSimd: false })`) instead of the relaxed ones Chromium runs. --loads: time `Model.load`
// of the file's bytes instead, each load in a fresh page (the heap after it is the load's peak).
// --adapter: both builds load the model with this LoRA adapter (GGUF), as wisp-agent runs.
import { createReadStream, existsSync } from "node:fs";
import { createServer } from "node:http";
import { extname, join, resolve } from "node:path";
import { chromium } from "playwright-core";

const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const opt = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const [pkgA, pkgB, model] = args.filter((a, i) => !a.startsWith("--") && !["--rounds", "--adapter"].includes(args[i - 1]));
const adapter = opt("--adapter");
if (!pkgA || !pkgB || !model) {
  console.error("usage: node benches-web/compare-builds.mjs PKG_A PKG_B MODEL.gguf [--rounds 16] [--plain] [--loads] [--adapter LORA.gguf]");
  process.exit(2);
}
const rounds = Number(opt("--rounds", "16"));
const plain = flag("--plain");

const roots = { "/a/": resolve(pkgA), "/b/": resolve(pkgB) };
const TYPES = { ".js": "text/javascript", ".wasm": "application/wasm" };
const server = createServer((req, res) => {
  const url = decodeURIComponent(req.url.split("?")[0]);
  if (url === "/") return res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>builds</title>");
  const root = Object.keys(roots).find((p) => url.startsWith(p));
  const file = url === "/model.gguf" ? resolve(model) : url === "/adapter.gguf" && adapter ? resolve(adapter) : root && join(roots[root], url.slice(root.length));
  if (!file || !existsSync(file)) return res.writeHead(404).end();
  res.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" });
  createReadStream(file).pipe(res);
});
await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
const base = `http://127.0.0.1:${server.address().port}/`;
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium", args: ["--no-sandbox"] });

// Loads build `which` in `page`: the load's time and the wasm heap after it.
const load = (page, which) =>
  page.evaluate(async ({ which, plain, adapter }) => {
    const { Model, init } = await import(`/${which}/index.js`);
    const wasm = await init(plain ? { relaxedSimd: false } : {});
    const bytes = new Uint8Array(await (await fetch("/model.gguf")).arrayBuffer());
    const adapters = adapter ? [{ bytes: new Uint8Array(await (await fetch("/adapter.gguf")).arrayBuffer()) }] : [];
    const t0 = performance.now();
    globalThis[which] = await Model.load(bytes, { backend: "cpu", cache: false, adapters });
    return { loadMs: performance.now() - t0, heapMiB: wasm.memory.buffer.byteLength / 2 ** 20, backend: globalThis[which].backend };
  }, { which, plain, adapter: Boolean(adapter) });

const PROMPT = Array.from({ length: 5 }, (_, i) =>
  `Chapter ${i + 1}. The river town woke before dawn; fishermen checked their nets, bakers lit their ovens, ` +
  `and the old clock on the square struck ${(i % 12) + 1}. Travellers asked about the bridge, the weather and the road north.`).join(" ");

const runs = { a: [], b: [] };
const order = (r) => (r % 2 ? ["b", "a"] : ["a", "b"]);
if (flag("--loads")) {
  for (let r = 0; r < rounds; r++) {
    for (const which of order(r)) {
      const page = await browser.newPage();
      await page.goto(base);
      const out = await load(page, which);
      runs[which].push({ loadMs: out.loadMs, heapMiB: out.heapMiB });
      console.log(r, which, JSON.stringify(runs[which].at(-1)));
      await page.close();
    }
  }
} else {
  const page = await browser.newPage();
  await page.goto(base);
  for (const which of ["a", "b"]) console.log(which, JSON.stringify(await load(page, which)));
  for (let r = 0; r < rounds; r++) {
    for (const which of order(r)) {
      const out = await page.evaluate(async ({ which, prompt, adapter }) => {
        const m = globalThis[which];
        // With an adapter, a chat turn: the agent adapter ends a bare text at once.
        const text = adapter ? await m.renderChat([{ role: "user", content: `${prompt}\n\nRetell this story in detail.` }]) : prompt;
        const ids = [...(await m.encode(text))];
        await m.seek(0);
        const res = await m.generate(ids, { maxTokens: 128, temperature: 0, draftTokens: 0 });
        const decodeMs = res.usage.totalMs - res.usage.ttftMs;
        return { promptTokens: ids.length, promptMs: res.usage.ttftMs, decodeTokS: (res.tokens.length - 1) / (decodeMs / 1000), tokens: res.tokens };
      }, { which, prompt: PROMPT, adapter: Boolean(adapter) });
      runs[which].push(out);
      console.log(r, which, JSON.stringify({ ...out, tokens: out.tokens.length }));
    }
  }
  const same = runs.a.every((x, i) => JSON.stringify(x.tokens) === JSON.stringify(runs.b[i].tokens));
  console.log(`greedy tokens the same in every round: ${same}`);
}
const median = (xs) => {
  const s = xs.slice().sort((x, y) => x - y);
  return (s[(s.length - 1) >> 1] + s[s.length >> 1]) / 2;
};
for (const key of Object.keys(runs.a[0]).filter((k) => typeof runs.a[0][k] === "number" && k !== "promptTokens")) {
  const ratios = runs.a.map((x, i) => runs.b[i][key] / x[key]);
  console.log(`${key}: B/A median of ${ratios.length} pairs ${median(ratios).toFixed(3)} (from ${Math.min(...ratios).toFixed(2)} to ${Math.max(...ratios).toFixed(2)})`);
}
await browser.close();
server.close();
