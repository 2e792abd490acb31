// Bundlers: a Vite app (tests/bundler/vite-app/) imports wisp-agent from the built package as an installed
// dependency, `vite build` bundles it into a temp dir with no extra configuration, and the built app runs
// an agent task in Chromium, on the page and in worker mode. Only the modules such an app can load are
// emitted (the main module, plain and relaxed); an app that imports "wisp-agent/threads"
// (tests/bundler/vite-app-threads/) also gets the threaded one, and runs on 2 threads when isolated.
import assert from "node:assert/strict";
import { cp, mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { build } from "vite";
import { chromium } from "playwright-core";
import { serve } from "../../tools/serve.mjs";
import { BASE_FLAGS, CHROMIUM } from "./harness.mjs";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

describe("bundlers: Vite", () => {
  let dir;
  let server;
  let browser;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "wisp-vite-"));
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test("vite build finds the wasm and the worker, emits only the main module, and the app runs an agent task", async (t) => {
    const { dist, wasm } = await buildApp(t, dir, "vite-app");
    assert.deepEqual(wasm, ["wisp_core_bg", "wisp_core_relaxed_bg"]);

    server = await serve(0, dist);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: [...BASE_FLAGS, "--enable-unsafe-webgpu"] });
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(`${server.url}/index.html`);
    await page.waitForFunction(() => window.outcome, null, { timeout: 120_000 });
    const outcome = await page.evaluate(() => window.outcome);
    t.diagnostic(JSON.stringify(outcome));
    assert.equal(outcome.error, undefined);
    for (const mode of ["page", "worker"]) {
      const call = outcome[mode].find((e) => e.type === "tool_call");
      assert.equal(call?.name, "get_weather", `${mode}: a tool call`);
      assert.equal(typeof call.arguments.city, "string");
      assert.equal(outcome[mode].at(-1).type, "final", `${mode}: a final answer`);
    }
    assert.deepEqual(errors, []);
  });

  test('an app that imports "wisp-agent/threads" also gets the threaded module, and runs on 2 threads', async (t) => {
    const { dist, wasm } = await buildApp(t, dir, "vite-app-threads");
    assert.deepEqual(wasm, ["wisp_core_bg", "wisp_core_mt_bg", "wisp_core_mt_relaxed_bg", "wisp_core_relaxed_bg"]);
    const isolated = await serve(0, dist, { isolated: true });
    try {
      const page = await browser.newPage();
      await page.goto(`${isolated.url}/index.html`);
      await page.waitForFunction(() => window.outcome, null, { timeout: 120_000 });
      const outcome = await page.evaluate(() => window.outcome);
      t.diagnostic(JSON.stringify(outcome));
      assert.equal(outcome.error, undefined);
      assert.deepEqual(outcome.backend, { kind: "cpu", reason: "asked for", threads: 2, simd: "relaxed" });
      assert.ok(outcome.tokens > 0);
    } finally {
      await isolated.close();
    }
  });
});

// Builds tests/bundler/NAME as an app with the built package installed and the bundled model in public/;
// returns dist/ and the names of the wasm modules emitted (without Vite's hash), and logs the size.
async function buildApp(t, dir, name) {
  const app = join(dir, name);
  const dist = join(dir, `${name}-dist`);
  await cp(join(ROOT, "tests/bundler", name), app, { recursive: true });
  // As `npm install wisp-agent` would leave it: a copy of the package in node_modules.
  await cp(join(ROOT, "pkg"), join(app, "node_modules/wisp-agent"), { recursive: true });
  const started = performance.now();
  await build({ root: app, base: "./", logLevel: "warn", build: { outDir: dist, emptyOutDir: true } });
  const ms = performance.now() - started;
  const assets = await readdir(join(dist, "assets"));
  let bytes = 0;
  for (const f of assets) bytes += (await stat(join(dist, "assets", f))).size;
  t.diagnostic(`${name}: vite build in ${ms.toFixed(0)} ms, assets ${(bytes / 1e6).toFixed(1)} MB: ${assets.join(", ")}`);
  // The bundled model, served next to the app (after the size count: it is not the package's).
  await cp(join(ROOT, "models/wisp-mini"), join(dist, "models/wisp-mini"), { recursive: true });
  const wasm = assets.filter((f) => f.endsWith(".wasm")).map((f) => f.replace(/-[\w-]{8}\.wasm$/, "")).sort();
  return { dist, wasm };
}
