// End-to-end: the demo page in www/ as a visitor sees it.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { openBrowser } from "./harness.mjs";

describe("demo page (www/)", () => {
  let browser;
  before(async () => {
    browser = await openBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  test("shows the adapter and passes the GPU check", async () => {
    const { page, url, consoleMessages } = browser;
    await page.goto(`${url}/www/`);
    await page.locator("#check-status.ok").waitFor({ timeout: 60_000 });
    assert.match(await page.locator("#check-status").textContent(), /^Passed: MatMul .* from onnxruntime \d/);
    assert.equal(await page.locator("#gpu-status").textContent(), "WebGPU adapter found.");
    assert.match(await page.locator("#gpu-details").textContent(), /Vendor/);
    assert.deepEqual(consoleMessages.filter((m) => m.startsWith("pageerror") || m.includes("Content-Security-Policy")), []);
  });

  test("says clearly when the browser has no WebGPU", async () => {
    const page = await browser.context.newPage();
    await page.addInitScript(() => delete Navigator.prototype.gpu);
    await page.goto(`${browser.url}/www/`);
    await page.locator("#gpu-status.error").waitFor({ timeout: 30_000 });
    assert.match(await page.locator("#gpu-status").textContent(), /^WebGPU is not available here.*navigator\.gpu is missing/);
    await page.close();
  });
});
