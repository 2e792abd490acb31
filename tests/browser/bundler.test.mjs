// Bundlers: a Vite app (tests/bundler/vite-app/) installs wisp-agent from the tarball `npm pack` makes of
// the built package, `vite build` bundles it into a temp dir with no extra configuration, and the built app
// runs an agent task in Chromium on the model that ships inside the package, on the page and in worker
// mode, and on wisp-agent with the base (which the set-up fetched) served by the app. Only the modules such an app can load are emitted (the main module, plain and relaxed); an app
// that imports "wisp-agent/threads" (tests/bundler/vite-app-threads/) also gets the threaded one, and runs
// on 2 threads when isolated.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, readdir, rm, stat, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
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

  let tarball;
  let agentDist;
  test("vite build finds the wasm, the worker and the package's models, emits only the main module, and the app runs an agent task", async (t) => {
    tarball = await pack(t, dir);
    const { dist, wasm, assets } = await buildApp(t, dir, "vite-app", tarball);
    agentDist = dist;
    assert.deepEqual(wasm, ["wisp_core_bg", "wisp_core_relaxed_bg"]);
    // The default model's files (the small ones may be inlined as data: URLs) and wisp-agent's adapter.
    for (const name of ["model", "tokenizer", "adapter"]) {
      assert.ok(assets.some((f) => f.startsWith(`${name}-`)), `vite emitted ${name}.*`);
    }
    assert.ok(!assets.some((f) => f.endsWith(".gguf") && f.startsWith("SmolLM2")), "the base model is not in the package");

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
    const { dist, wasm } = await buildApp(t, dir, "vite-app-threads", tarball);
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

  const base = join(ROOT, "models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf");
  test("the same app runs wisp-agent: the adapter from the package, the base served by the app", async (t) => {
    await symlink(base, join(agentDist, "SmolLM2-135M-Instruct.Q4_1.gguf"));
    const page = await browser.newPage();
    await page.goto(`${server.url}/index.html?base=SmolLM2-135M-Instruct.Q4_1.gguf`);
    await page.waitForFunction(() => window.outcome, null, { timeout: 300_000 });
    const outcome = await page.evaluate(() => window.outcome);
    t.diagnostic(JSON.stringify(outcome));
    assert.equal(outcome.error, undefined);
    assert.deepEqual(outcome.agent.find((e) => e.type === "tool_call")?.arguments, { city: "Paris" });
    assert.equal(outcome.agent.at(-1).type, "final");
  });
});

// The tarball `npm pack` makes of pkg/ (only the files package.json's `files` lists), in `dir`.
async function pack(t, dir) {
  const { stdout } = await promisify(execFile)("npm", ["pack", join(ROOT, "pkg"), "--pack-destination", dir, "--json"]);
  const [info] = JSON.parse(stdout);
  t.diagnostic(`npm pack: ${info.filename}, ${(info.size / 1e6).toFixed(1)} MB packed, ${info.entryCount} files`);
  return join(dir, info.filename);
}

// Builds tests/bundler/NAME as an app with the packed package installed; returns dist/, the names of the
// wasm modules emitted (without Vite's hash) and of all assets, and logs the size.
async function buildApp(t, dir, name, tarball) {
  const app = join(dir, name);
  const dist = join(dir, `${name}-dist`);
  await cp(join(ROOT, "tests/bundler", name), app, { recursive: true });
  // As `npm install wisp-agent` would leave it: the tarball unpacked into node_modules.
  const installed = join(app, "node_modules/wisp-agent");
  await mkdir(installed, { recursive: true });
  await promisify(execFile)("tar", ["-xzf", tarball, "-C", installed, "--strip-components=1"]);
  const started = performance.now();
  await build({ root: app, base: "./", logLevel: "warn", build: { outDir: dist, emptyOutDir: true } });
  const ms = performance.now() - started;
  const assets = await readdir(join(dist, "assets"));
  let bytes = 0;
  for (const f of assets) bytes += (await stat(join(dist, "assets", f))).size;
  t.diagnostic(`${name}: vite build in ${ms.toFixed(0)} ms, assets ${(bytes / 1e6).toFixed(1)} MB: ${assets.join(", ")}`);
  const wasm = assets.filter((f) => f.endsWith(".wasm")).map((f) => f.replace(/-[\w-]{8}\.wasm$/, "")).sort();
  return { dist, wasm, assets };
}
