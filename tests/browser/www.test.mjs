// End-to-end: the demo page in www/ as a visitor sees it: with wisp-agent (the set-up fetched its base),
// and with the fallback wisp-mini where the server has no base.
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

  test("a question shows the tool call, its outcome and the speed, as text", async (t) => {
    const { page, url, consoleMessages } = browser;
    await page.goto(`${url}/www/`);
    await page.locator("#question:not([disabled])").waitFor({ timeout: 120_000 });
    assert.match(await page.locator("#status").textContent(), /^WebGPU: .* Ready\. wisp-agent runs on /);
    assert.equal(await page.locator("#model-choice").inputValue(), "agent");
    await page.fill("#question", "What's the weather in Paris?");
    await page.click("#send");
    await page.locator("#chat li.tool").first().waitFor({ timeout: 120_000 });
    await page.locator("#send:not([disabled])").waitFor({ timeout: 120_000 });
    const trace = await page.locator("#chat li.tool").first().textContent();
    t.diagnostic(`${trace} | ${await page.locator("#speed").textContent()}`);
    assert.match(trace, /^→ get_weather\(\{"city":".*"\}\)\n[←✗] /);
    assert.match(await page.locator("#speed").textContent(), /tokens\/s/);
    assert.equal(await page.locator("#chat li.user").textContent(), "What's the weather in Paris?");
    await page.screenshot({ path: new URL("../../www/screenshots/demo.png", import.meta.url).pathname, fullPage: true });
    assert.deepEqual(consoleMessages.filter((m) => m.startsWith("pageerror") || m.includes("Content-Security-Policy")), []);
  });

  test("Stop ends a run in the middle, and the next question still gets an answer", async () => {
    const page = await browser.context.newPage();
    await page.goto(`${browser.url}/www/`);
    await page.locator("#question:not([disabled])").waitFor({ timeout: 120_000 });
    // Press Stop the moment the first tool call shows up: the model (in its worker) is mid-run then.
    await page.evaluate(() => {
      new MutationObserver((_, observer) => {
        if (document.querySelector("#chat li.tool")) {
          observer.disconnect();
          document.getElementById("stop").click();
        }
      }).observe(document.getElementById("chat"), { childList: true });
    });
    await page.fill("#question", "What's the weather in Paris?");
    await page.click("#send");
    await page.locator("#chat li.assistant", { hasText: "(stopped)" }).waitFor({ timeout: 120_000 });
    await page.locator("#send:not([disabled])").waitFor({ timeout: 120_000 });
    await page.fill("#question", "What's the weather in London?");
    await page.click("#send");
    await page.locator("#chat li.tool").nth(1).waitFor({ timeout: 120_000 });
    await page.locator("#send:not([disabled])").waitFor({ timeout: 120_000 });
    assert.doesNotMatch(await page.locator("#chat li.assistant").last().textContent(), /^\((stopped|error)/);
    await page.close();
  });

  test("without WebGPU it says so and runs on the CPU", async () => {
    const page = await browser.context.newPage();
    await page.addInitScript(() => delete Navigator.prototype.gpu);
    await page.goto(`${browser.url}/www/`);
    await page.locator("#question:not([disabled])").waitFor({ timeout: 120_000 });
    assert.match(await page.locator("#status").textContent(), /^WebGPU is not available here \(.*navigator\.gpu is missing.*\); Wisp runs on the CPU\. Ready\./);
    await page.close();
  });
});

describe("demo page where the server has no wisp-agent base", () => {
  let browser;
  before(async () => {
    browser = await openBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  test("it runs the fallback wisp-mini, says so, and answers", async (t) => {
    const { page, url, consoleMessages } = browser;
    // No service worker: its store would hold the base after one visit.
    await page.addInitScript(() => delete Navigator.prototype.serviceWorker);
    await page.route("**/*.Q4_1.gguf", (route) => route.fulfill({ status: 404 }));
    await page.goto(`${url}/www/`);
    await page.locator("#question:not([disabled])").waitFor({ timeout: 120_000 });
    const status = await page.locator("#status").textContent();
    t.diagnostic(status);
    assert.match(status, /Ready\. wisp-mini runs on .* wisp-agent's base model is not served here \(bash tools\/fetch-smollm2\.sh gets it\), so the tiny fallback runs/);
    assert.equal(await page.locator("#model-choice").inputValue(), "bundled");
    assert.equal(await page.locator('#model-choice [value="agent"]').evaluate((o) => o.disabled), true);
    await page.fill("#question", "What's the weather in Paris?");
    await page.click("#send");
    await page.locator("#chat li.tool").first().waitFor({ timeout: 120_000 });
    await page.locator("#send:not([disabled])").waitFor({ timeout: 120_000 });
    assert.match(await page.locator("#chat li.tool").first().textContent(), /^→ get_weather\(\{"city":".*"\}\)\n[←✗] /);
    assert.deepEqual(consoleMessages.filter((m) => m.startsWith("pageerror")), []);
  });
});

// Chromium on Linux offers WebGPU only with --enable-unsafe-webgpu: without it the demo must still work.
describe("demo page in a Chromium without WebGPU (no --enable-unsafe-webgpu)", () => {
  let browser;
  before(async () => {
    browser = await openBrowser({ webgpu: false });
  });
  after(async () => {
    await browser?.close();
  });

  test("the agent answers on the CPU, with its tool call", async (t) => {
    const { page, url, consoleMessages } = browser;
    await page.goto(`${url}/www/`);
    await page.locator("#question:not([disabled])").waitFor({ timeout: 120_000 });
    const status = await page.locator("#status").textContent();
    t.diagnostic(status);
    assert.match(status, /^WebGPU is not available here .*; Wisp runs on the CPU\. Ready\./);
    await page.fill("#question", "What's the weather in Paris?");
    await page.click("#send");
    await page.locator("#chat li.tool").first().waitFor({ timeout: 120_000 });
    await page.locator("#send:not([disabled])").waitFor({ timeout: 120_000 });
    assert.match(await page.locator("#chat li.tool").first().textContent(), /^→ get_weather\(\{"city":".*"\}\)\n[←✗] /);
    assert.doesNotMatch(await page.locator("#chat li.assistant").last().textContent(), /^\((stopped|error)/);
    assert.deepEqual(consoleMessages.filter((m) => m.startsWith("pageerror")), []);
  });
});
