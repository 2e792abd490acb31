// An agent's system + tools prefix kept across page loads (pkg-templates/prefix-cache.js): the first run
// of a reloaded page restores the keys and values instead of prefilling them, and answers exactly as the
// first page did (an agent, a worker's agent, the OpenAI surface); damaged or foreign entries cost only the
// prefill; nothing is kept without the cache.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { browserFor } from "./harness.mjs";

const PREFIXES = "https://wisp.invalid/prefix/";

// In the page: one run of a fresh agent on a freshly loaded wisp-mini (main thread or worker), with the
// first message's usage and what the cache then holds.
async function runOnce({ system = "You are a helpful assistant.", cache = true, worker = false, prefixes }) {
  const { createAgent } = await import("/pkg/index.js");
  const agent = await createAgent({ model: { bundle: "/models/wisp-mini/manifest.json" }, load: { backend: "cpu", cache }, worker, system });
  agent.tool(
    {
      name: "get_weather",
      description: "Current weather for a city.",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    },
    ({ city }) => ({ city, temperature_c: 18, condition: "sunny" }),
  );
  const steps = [];
  const result = await agent.run("What's the weather in Paris?", {
    onEvent: (e) => e.type === "step_end" && steps.push(e.usage),
  });
  agent.close();
  const store = await caches.open("wisp-models-v1");
  // The write goes on after the run: wait for it (at most 5 s).
  const kept = async () => (await store.keys()).map((r) => r.url).filter((u) => u.startsWith(prefixes));
  for (let i = 0; i < 50 && (await kept()).length === 0 && cache; i++) await new Promise((r) => setTimeout(r, 100));
  return { text: result.text, calls: result.toolCalls.map((c) => [c.name, c.arguments]), first: steps[0], kept: await kept() };
}

describe("an agent's prefix kept across page loads", () => {
  const browser = browserFor({ helpers: () => {} });

  test("a reloaded page restores it, answers as the first page did, and survives damaged entries", async () => {
    const { page } = browser;
    const run = (options = {}) => page.evaluate(runOnce, { prefixes: PREFIXES, ...options });
    await page.evaluate(async () => (await import("/pkg/index.js")).clearModelCache());

    const first = await run();
    assert.equal(first.first.cachedTokens, 0, JSON.stringify(first));
    assert.equal(first.kept.length, 1, JSON.stringify(first.kept));
    assert.deepEqual(first.calls, [["get_weather", { city: "Paris" }]]);

    await page.reload();
    const again = await run();
    // The prefix (system message and tools) came from the cache: only the user's message was prefilled.
    assert.ok(again.first.cachedTokens > 40, JSON.stringify(again.first));
    assert.equal(again.first.promptTokens, first.first.promptTokens);
    assert.ok(again.first.promptTokens - again.first.cachedTokens < 20, JSON.stringify(again.first));
    assert.deepEqual([again.text, again.calls], [first.text, first.calls]);
    assert.deepEqual(again.kept, first.kept);

    // The same through a worker (the core's calls cross to it).
    await page.reload();
    const worker = await run({ worker: true });
    assert.equal(worker.first.cachedTokens, again.first.cachedTokens, JSON.stringify(worker.first));
    assert.deepEqual([worker.text, worker.calls], [first.text, first.calls]);

    // A damaged entry is prefilled over and replaced.
    await page.evaluate(async (url) => (await caches.open("wisp-models-v1")).put(url, new Response("wisp-kv1 but not really")), first.kept[0]);
    await page.reload();
    const damaged = await run();
    assert.equal(damaged.first.cachedTokens, 0, JSON.stringify(damaged.first));
    assert.deepEqual([damaged.text, damaged.calls], [first.text, first.calls]);
    const magic = await page.evaluate(async (url) => {
      for (let i = 0; i < 50; i++) {
        const kept = await (await caches.open("wisp-models-v1")).match(url);
        const bytes = new Uint8Array(kept ? await kept.arrayBuffer() : new ArrayBuffer(0));
        if (bytes.length > 100) return new TextDecoder().decode(bytes.slice(0, 8));
        await new Promise((r) => setTimeout(r, 100));
      }
      return "never replaced";
    }, first.kept[0]);
    assert.equal(magic, "wisp-kv1");

    // Another system message is another prefix; the newest four are kept.
    for (const n of [1, 2, 3, 4]) await run({ system: `You are assistant number ${n}.` });
    const kept = await page.evaluate(async (prefixes) => {
      const store = await caches.open("wisp-models-v1");
      return {
        entries: (await store.keys()).map((r) => r.url).filter((u) => u.startsWith(prefixes)),
        index: await (await store.match("https://wisp.invalid/prefixes.json")).json(),
      };
    }, PREFIXES);
    assert.equal(kept.entries.length, 4, JSON.stringify(kept));
    assert.ok(!kept.entries.includes(first.kept[0]), "the oldest went");
    assert.deepEqual(new Set(kept.index.map((k) => PREFIXES + k)), new Set(kept.entries));

    // The OpenAI surface (one stateless request: a fresh core agent) restores it too.
    await page.evaluate(async () => (await import("/pkg/index.js")).clearModelCache());
    const request = async () => {
      const { Model, createChatCompletions } = await import("/pkg/index.js");
      const model = await Model.load({ bundle: "/models/wisp-mini/manifest.json" }, { backend: "cpu" });
      const tools = [{ type: "function", function: { name: "get_weather", description: "Current weather for a city.", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];
      const r = await createChatCompletions(model).create({ messages: [{ role: "user", content: "What's the weather in Paris?" }], tools, temperature: 0, max_tokens: 48 });
      model.close();
      const store = await caches.open("wisp-models-v1");
      for (let i = 0; i < 50 && !(await store.keys()).some((k) => k.url.includes("/prefix/")); i++) await new Promise((r) => setTimeout(r, 100));
      const m = r.choices[0].message;
      return { message: [m.content, (m.tool_calls ?? []).map((c) => [c.function.name, c.function.arguments])], cached: r.usage.cached_tokens };
    };
    const openaiFirst = await page.evaluate(request);
    await page.reload();
    const openaiAgain = await page.evaluate(request);
    assert.equal(openaiFirst.cached, 0);
    assert.ok(openaiAgain.cached > 40, JSON.stringify(openaiAgain));
    assert.deepEqual(openaiAgain.message, openaiFirst.message);

    // Without the cache nothing is kept, and nothing restored.
    await page.evaluate(async () => (await import("/pkg/index.js")).clearModelCache());
    const uncached = await run({ cache: false });
    assert.deepEqual(uncached.kept, []);
    assert.equal(uncached.first.cachedTokens, 0);
    assert.deepEqual(await page.evaluate(() => window.unhandled), []);
  });
});
