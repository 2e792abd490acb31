// The demo as an offline PWA: after one visit (the service worker installed, its precache done), the
// network is cut (Playwright's offline mode, and the server itself shut down) and the reloaded demo still
// loads wisp-agent (base, adapter and all, from the service worker's store) and completes an agent task.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { openBrowser } from "./harness.mjs";

describe("offline PWA (www/sw.js)", () => {
  let browser;
  before(async () => {
    browser = await openBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  test("after one visit the demo answers with the network cut", async (t) => {
    const { page, url, context, consoleMessages } = browser;
    await page.goto(`${url}/www/`);
    // `ready` resolves once the service worker is active, i.e. after its install (the precache) finished.
    const sw = await page.evaluate(async () => {
      // Without a controller after two minutes, fail with the worker's state rather than wait forever.
      let timer;
      const stuck = new Promise((_, reject) => {
        timer = setTimeout(async () => {
          const r = await navigator.serviceWorker.getRegistration();
          const state = { installing: r?.installing?.state, waiting: r?.waiting?.state, active: r?.active?.state };
          reject(new Error(`no controlling service worker after 120 s: ${JSON.stringify(state)}`));
        }, 120_000);
      });
      const controlled = (async () => {
        await navigator.serviceWorker.ready;
        if (!navigator.serviceWorker.controller) {
          await new Promise((resolve) => navigator.serviceWorker.addEventListener("controllerchange", resolve, { once: true }));
        }
      })();
      await Promise.race([controlled, stuck]);
      clearTimeout(timer);
      const registration = await navigator.serviceWorker.ready;
      const models = await (await caches.open("wisp-models-v1")).keys();
      const app = await (await caches.open("wisp-demo-v1")).keys();
      return { scope: registration.scope, models: models.map((r) => new URL(r.url).pathname), app: app.map((r) => new URL(r.url).pathname) };
    });
    t.diagnostic(`scope ${sw.scope}; ${sw.app.length} app files, ${sw.models.length} model files`);
    assert.equal(sw.scope, `${url}/`);
    assert.ok(sw.app.includes("/pkg/worker.js") && sw.app.includes("/www/"));
    // Chromium runs relaxed SIMD: only those builds of the modules are stored.
    assert.ok(sw.app.includes("/pkg/wisp_core_relaxed_bg.wasm") && sw.app.includes("/pkg/wisp_core_mt_relaxed_bg.wasm"));
    assert.ok(!sw.app.includes("/pkg/wisp_core_bg.wasm") && !sw.app.includes("/pkg/wisp_core_mt_bg.wasm"));
    for (const file of ["wisp-mini/model.safetensors", "wisp-agent/manifest.json", "wisp-agent/adapter.gguf", "wisp-agent/SmolLM2-135M-Instruct.Q4_1.gguf"]) {
      assert.ok(sw.models.includes(`/models/${file}`), file);
    }
    await page.locator("#question:not([disabled])").waitFor({ timeout: 120_000 });
    assert.match(await page.locator("#offline").textContent(), /^Stored for offline use: .*both models \(wisp-agent and wisp-mini\)/);

    await context.setOffline(true);
    await browser.stopServer();
    await page.reload();
    await page.locator("#question:not([disabled])").waitFor({ timeout: 120_000 });
    assert.match(await page.locator("#status").textContent(), /Ready\. wisp-agent runs on /);
    await page.fill("#question", "What's the weather in Paris?");
    await page.click("#send");
    await page.locator("#send:not([disabled])").waitFor({ timeout: 120_000 });
    const trace = await page.locator("#chat li.tool").first().textContent();
    const answer = await page.locator("#chat li.assistant").last().textContent();
    t.diagnostic(`${trace} | ${answer}`);
    const args = JSON.parse(trace.match(/^→ get_weather\((\{.*\})\)\n/)[1]);
    assert.equal(typeof args.city, "string");
    assert.ok(answer.trim().length > 0 && !answer.startsWith("(error"), answer);
    assert.deepEqual(consoleMessages.filter((m) => m.startsWith("pageerror")), []);
  });
});
