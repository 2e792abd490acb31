// The threaded CPU module (wisp_core_mt) in Chromium. In a worker of a cross-origin isolated page
// (tools/serve.mjs with COOP/COEP) the bundled model gives bit-identical logits and the same greedy tokens
// on 1 thread (the main module) and on 2 (the threaded one, which reports 2 threads), and so does an
// agent's run. On the page's main thread, which may not block while workers compute, and in a page that
// is not isolated, a request for 2 threads runs on 1 with the main module.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";
import { openBrowser } from "./harness.mjs";

const BUNDLE = { bundle: "/models/wisp-mini/manifest.json" };

// In the page: the golden prompt's logits (as bits, every position) and 24 greedy tokens, where the model
// ran, and timings for the log (speed is measured in benches-web). `worker`: through a WorkerModel.
async function runModel(page, { ids, threads, worker, threadsEntry = true }) {
  return page.evaluate(
    async ({ bundle, ids, threads, worker, threadsEntry }) => {
      const { Model, WorkerModel } = await import("/pkg/index.js");
      if (threadsEntry) await import("/pkg/threads.js");
      const load = worker ? (s, o) => WorkerModel.load(s, o) : (s, o) => Model.load(s, o);
      const model = await load(bundle, { backend: "cpu", threads, contextLen: 640, cache: false });
      const t0 = performance.now();
      const logits = await model.forward(ids);
      const prefillMs = performance.now() - t0;
      const bits = [...new Uint32Array(logits.buffer, logits.byteOffset, logits.length)];
      await model.seek(0);
      const r = await model.generate(ids, { maxTokens: 24 });
      const backend = model.backend;
      model.close();
      return { backend, bits, tokens: r.tokens, prefillMs, decodeTokPerSec: r.usage.tokensPerSecond };
    },
    { bundle: BUNDLE, ids, threads, worker, threadsEntry },
  );
}

const log = (t, what, r) =>
  t.diagnostic(`${what}, ${r.backend.threads} thread(s): prefill ${r.prefillMs.toFixed(0)} ms, decode ${r.decodeTokPerSec.toFixed(0)} tok/s`);

// Whether the page itself fetched the threaded module's wasm.
const fetchedThreaded = (page) =>
  page.evaluate(() => performance.getEntriesByType("resource").some((e) => /\/pkg\/wisp_core_mt(_relaxed)?_bg\.wasm$/.test(e.name)));

let ids;
before(async () => {
  const golden = JSON.parse(await readFile(new URL("../fixtures/bundled/golden.json", import.meta.url), "utf8"));
  ids = golden.cases[0].token_ids;
});

describe("CPU threads in a cross-origin isolated page", () => {
  let browser;
  before(async () => {
    browser = await openBrowser({ isolated: true });
  });
  after(async () => {
    await browser?.close();
  });

  test("the page is isolated", async () => {
    assert.deepEqual(await browser.page.evaluate(() => [self.crossOriginIsolated, typeof SharedArrayBuffer]), [true, "function"]);
  });

  let page;
  test("on the page's main thread the model runs on 1 thread, with the main module", async (t) => {
    page = await runModel(browser.page, { ids, threads: 2 });
    log(t, "page", page);
    assert.deepEqual(page.backend, { kind: "cpu", reason: "asked for", threads: 1, simd: "relaxed" });
    assert.equal(await fetchedThreaded(browser.page), false);
    assert.equal(page.tokens.length, 24);
  });

  test("worker mode, 1 and 2 threads: the same logits, bit for bit, and tokens", async (t) => {
    const one = await runModel(browser.page, { ids, threads: 1, worker: true });
    const two = await runModel(browser.page, { ids, threads: 2, worker: true });
    log(t, "worker", one);
    log(t, "worker", two);
    assert.deepEqual(one.backend, { kind: "cpu", reason: "asked for", threads: 1, simd: "relaxed" });
    assert.deepEqual(two.backend, { kind: "cpu", reason: "asked for", threads: 2, simd: "relaxed" });
    for (const r of [one, two]) {
      assert.equal(r.bits.length, page.bits.length);
      assert.ok(r.bits.every((b, i) => b === page.bits[i]), `logits on ${r.backend.threads} thread(s) differ from the page's`);
      assert.deepEqual(r.tokens, page.tokens);
    }
  });

  test("auto on a software WebGPU adapter picks the threaded CPU module in a worker; an agent runs the same on it", async () => {
    const r = await browser.page.evaluate(async (bundle) => {
      const { WorkerModel, createAgent } = await import("/pkg/index.js");
      await import("/pkg/threads.js");
      const { demoTools } = await import("/www/tools.js");
      const transcript = async (threads) => {
        const model = await WorkerModel.load(bundle, { threads, cache: false });
        const agent = await createAgent({ model, system: "You are a helpful assistant.", maxSteps: 2 });
        for (const [spec, fn] of demoTools) agent.tool(spec, fn);
        const result = await agent.run("What's the weather in Paris?");
        const out = { backend: model.backend, text: result.text, calls: result.toolCalls.map((c) => [c.name, c.arguments]) };
        model.close();
        return out;
      };
      return { one: await transcript(1), two: await transcript(2) };
    }, BUNDLE);
    assert.match(r.two.backend.reason, /software fallback/);
    assert.equal(r.two.backend.threads, 2);
    assert.equal(r.one.backend.threads, 1);
    assert.ok(r.one.calls.length > 0, "the agent called a tool");
    assert.deepEqual(r.two.calls, r.one.calls);
    assert.equal(r.two.text, r.one.text);
  });

  test("without wisp-agent/threads, worker mode runs on 1 thread, says why, and never fetches the threaded module", async () => {
    // A page of its own: the threads entry of the other tests is imported once per realm.
    const page = await browser.context.newPage();
    try {
      await page.goto(`${browser.url}/tests/browser/blank.html`);
      // Routes see the worker's requests too.
      const threadedFiles = [];
      await page.route("**/pkg/wisp_core_mt*", (route) => (threadedFiles.push(route.request().url()), route.continue()));
      const r = await runModel(page, { ids: ids.slice(0, 64), threads: 2, worker: true, threadsEntry: false });
      assert.deepEqual(r.backend, { kind: "cpu", reason: 'asked for; on 1 thread: the threaded module is not loaded (import "wisp-agent/threads")', threads: 1, simd: "relaxed" });
      assert.deepEqual(threadedFiles, []);
    } finally {
      await page.close();
    }
  });

  test("when the threaded module cannot start, the model runs on 1 thread and says why", async () => {
    const { page } = browser;
    await page.route("**/pkg/wisp_core_mt_relaxed_bg.wasm", (route) => route.abort("failed"));
    try {
      const r = await runModel(page, { ids: ids.slice(0, 64), threads: 2, worker: true });
      assert.equal(r.backend.threads, 1);
      assert.match(r.backend.reason, /^asked for; on 1 thread: could not start the threaded Wisp module/);
    } finally {
      await page.unroute("**/pkg/wisp_core_mt_relaxed_bg.wasm");
    }
  });
});

describe("CPU threads in a page that is not isolated", () => {
  let browser;
  before(async () => {
    browser = await openBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  test("worker mode asking for 2 threads runs on 1, with the main module", async () => {
    const r = await runModel(browser.page, { ids: ids.slice(0, 64), threads: 2, worker: true });
    assert.equal(await browser.page.evaluate(() => self.crossOriginIsolated), false);
    assert.deepEqual(r.backend, { kind: "cpu", reason: "asked for", threads: 1, simd: "relaxed" });
    assert.ok(r.tokens.length > 0);
  });

  test("a threads option that is not a whole number >= 1 is refused with INVALID_REQUEST", async () => {
    const codes = await browser.page.evaluate(async (bundle) => {
      const { Model, WorkerModel } = await import("/pkg/index.js");
      const codes = [];
      for (const load of [Model.load, WorkerModel.load]) {
        for (const threads of [0, 1.5, "2"]) {
          try {
            (await load.call(load === Model.load ? Model : WorkerModel, bundle, { threads, cache: false })).close();
            codes.push("loaded");
          } catch (e) {
            codes.push(e.code);
          }
        }
      }
      return codes;
    }, BUNDLE);
    assert.deepEqual(codes, Array(6).fill("INVALID_REQUEST"));
  });
});
