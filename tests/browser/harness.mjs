// Opens headless Chromium with WebGPU (SwiftShader on a machine without a GPU) on pages served from the
// repository over http://127.0.0.1, for tests that use the built package in pkg/.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
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
 * not to; headless Chromium runs extensions since its new headless mode).
 * Returns { url, context, page, consoleMessages, stopServer, close }; stopServer shuts the server down early
 * (for offline tests).
 */
export async function openBrowser({ webgpu = true, extension, isolated = false } = {}) {
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
