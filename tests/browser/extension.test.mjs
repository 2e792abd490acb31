// The example MV3 extension (www/extension/, assembled by tools/build-extension.mjs): Chromium loads it
// unpacked, its panel page runs the agent (in a worker started by the panel) with wisp-agent, whose base
// the build copies in (the set-up fetched it), or, built without that base, with the fallback wisp-mini;
// its tool reads the active tab's title through chrome.tabs.
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { buildExtension } from "../../tools/build-extension.mjs";
import { openBrowser } from "./harness.mjs";

const TITLE = "Quarterly report 2026";

for (const { agent, name, screenshot } of [
  { agent: true, name: /^wisp-agent runs/, screenshot: true },
  { agent: false, name: /^wisp-mini \(the tiny fallback: this extension was built without wisp-agent's base\) runs/ },
]) describe(`MV3 extension (www/extension/), built ${agent ? "with wisp-agent's base" : "without wisp-agent's base"}`, () => {
  let browser;
  let dir;
  before(async () => {
    const built = await buildExtension(join(await mkdtemp(join(tmpdir(), "wisp-extension-")), "extension"), { agent });
    dir = built.out;
    assert.equal(built.agent, agent);
    browser = await openBrowser({ extension: dir });
  });
  after(async () => {
    await browser?.close();
    if (dir) await rm(join(dir, ".."), { recursive: true, force: true });
  });

  test("the panel loads the model and its tool reads the active tab's title", async (t) => {
    const { context, page, consoleMessages } = browser;
    const worker = context.serviceWorkers()[0] ?? (await context.waitForEvent("serviceworker", { timeout: 30_000 }));
    const id = new URL(worker.url()).host;
    await page.goto(`data:text/html,<title>${encodeURIComponent(TITLE)}</title><h1>A page with a known title</h1>`);
    const panel = await context.newPage();
    await panel.setViewportSize({ width: 400, height: 640 });
    panel.on("pageerror", (e) => consoleMessages.push(`pageerror: ${e.message}`));
    panel.on("console", (m) => consoleMessages.push(`${m.type()}: ${m.text()}`));
    await panel.goto(`chrome-extension://${id}/panel.html`);
    await panel.locator("#question:not([disabled])").waitFor({ timeout: 120_000 });
    const status = await panel.locator("#status").textContent();
    t.diagnostic(status);
    assert.match(status, /^Ready\. /);
    assert.match(status.slice("Ready. ".length), name);

    // The panel's own tool function, as the agent calls it: the panel is a tab here, so it must skip itself.
    const read = await panel.evaluate(async () => (await import("./panel.js")).tabTitle[1]());
    assert.equal(read.title, TITLE);

    await panel.fill("#question", "What is the title of this tab?");
    await panel.click("#send");
    await panel.locator("#chat li.tool").first().waitFor({ timeout: 120_000 });
    await panel.locator("#send:not([disabled])").waitFor({ timeout: 120_000 });
    const chat = await panel.locator("#chat").innerText();
    t.diagnostic(chat.replaceAll("\n", " | "));
    // Constrained decoding lets the model call only the registered tool, with valid arguments.
    const trace = await panel.locator("#chat li.tool").first().textContent();
    assert.match(trace, /^→ get_active_tab_title\(\{\}\)/);
    assert.ok(trace.includes(`"title":"${TITLE}"`), trace);
    assert.doesNotMatch(chat, /\(error /);
    if (screenshot) await panel.screenshot({ path: new URL("../../www/screenshots/extension.png", import.meta.url).pathname });
    assert.deepEqual(consoleMessages.filter((m) => m.startsWith("pageerror") || m.includes("Content Security Policy")), []);
  });
});
