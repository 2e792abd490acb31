// Bundlers: a Vite app (tests/bundler/vite-app/) imports wisp-agent from the built package as an installed
// dependency, `vite build` bundles it into a temp dir with no extra configuration, and the built app runs
// an agent task in Chromium, on the page and in worker mode.
import assert from "node:assert/strict";
import { cp, mkdtemp, readdir, rm } from "node:fs/promises";
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

  test("vite build finds the wasm and the worker, and the app runs an agent task", async (t) => {
    const app = join(dir, "app");
    const dist = join(dir, "dist");
    await cp(join(ROOT, "tests/bundler/vite-app"), app, { recursive: true });
    // As `npm install wisp-agent` would leave it: a copy of the package in node_modules.
    await cp(join(ROOT, "pkg"), join(app, "node_modules/wisp-agent"), { recursive: true });
    // The bundled model, served next to the app.
    await cp(join(ROOT, "models/wisp-mini"), join(app, "public/models/wisp-mini"), { recursive: true });
    const started = performance.now();
    await build({ root: app, base: "./", logLevel: "warn", build: { outDir: dist, emptyOutDir: true } });
    const assets = await readdir(join(dist, "assets"));
    t.diagnostic(`vite build in ${(performance.now() - started).toFixed(0)} ms: ${assets.join(", ")}`);
    assert.ok(assets.some((f) => f.endsWith(".wasm")), "the .wasm is emitted as an asset");

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
});
