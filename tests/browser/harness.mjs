// Opens headless Chromium with WebGPU (SwiftShader on a machine without a GPU) on pages served from the
// repository over http://127.0.0.1, for tests that use the built package in pkg/.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";
import { chromium } from "playwright-core";
import { serve } from "../../tools/serve.mjs";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const BASE_FLAGS = [
  "--no-sandbox",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

/**
 * Starts the server and a fresh browser profile. `webgpu: false` leaves out --enable-unsafe-webgpu;
 * `isolated: true` serves with COOP/COEP, so that pages are cross-origin isolated (SharedArrayBuffer, threads);
 * `extension: dir` loads the unpacked extension in `dir` (Playwright passes --disable-extensions unless told
 * not to; headless Chromium runs extensions since its new headless mode); `helpers: fn` installs
 * `pageHelpers` and then `fn` in the page before its scripts (a function of no arguments, run in the page).
 * Returns { url, context, page, consoleMessages, stopServer, close }; stopServer shuts the server down early
 * (for offline tests).
 */
export async function openBrowser({ webgpu = true, extension, isolated = false, helpers } = {}) {
  const server = await serve(0, undefined, { isolated });
  const profile = await mkdtemp(join(tmpdir(), "wisp-chromium-"));
  const args = webgpu ? [...BASE_FLAGS, "--enable-unsafe-webgpu"] : [...BASE_FLAGS];
  if (extension) args.push(`--disable-extensions-except=${extension}`, `--load-extension=${extension}`);
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args,
    ignoreDefaultArgs: extension ? ["--disable-extensions"] : [],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  // A blank page of our origin, so that tests can import("/pkg/index.js").
  await page.goto(`${server.url}/tests/browser/blank.html`);
  if (helpers) {
    await page.addInitScript(pageHelpers);
    await page.addInitScript(helpers);
    await page.reload();
  }
  const consoleMessages = [];
  page.on("console", (m) => consoleMessages.push(`${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => consoleMessages.push(`pageerror: ${e.message}`));
  return {
    url: server.url,
    context,
    page,
    consoleMessages,
    stopServer: () => server.close(),
    async close() {
      await context.close();
      await server.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/**
 * Run in a page before its scripts (`openBrowser({ helpers })`, or `page.addInitScript`): unhandled
 * rejections are collected in `window.unhandled`, and `attempt(fn)` gives "resolved" or the error's
 * `{ name, code, message }`.
 */
export function pageHelpers() {
  window.unhandled = [];
  addEventListener("unhandledrejection", (e) => window.unhandled.push(String(e.reason?.message ?? e.reason)));
  window.attempt = async (fn) => {
    try {
      await fn();
      return "resolved";
    } catch (e) {
      return { name: e?.name, code: e?.code, message: e?.message };
    }
  };
}

/**
 * The browser of a `describe` block: opened (`openBrowser(options)`) before its first test and closed after
 * its last. The returned object gets the fields of `openBrowser`'s result once open.
 */
export function browserFor(options) {
  const browser = {};
  before(async () => {
    Object.assign(browser, await openBrowser(options));
  });
  after(async () => {
    await browser.close?.();
  });
  return browser;
}

/**
 * A meter of `browser`'s page: each call collects garbage and gives `{ heap, wasm }`, the JS heap in use
 * and what the page's `window.soak.memory()` reports (the test defines it: wasm memory in bytes).
 */
export async function memoryMeter({ page, context }) {
  const cdp = await context.newCDPSession(page);
  return async () => {
    await cdp.send("HeapProfiler.collectGarbage");
    const { usedSize } = await cdp.send("Runtime.getHeapUsage");
    return { heap: usedSize, wasm: await page.evaluate(() => window.soak.memory()) };
  };
}
