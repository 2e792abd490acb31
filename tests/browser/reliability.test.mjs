// Nothing a page passes in can kill the package (issue #23), through the built package in Chromium:
// cyclic, deep and wide schemas and values are coded errors before they reach wasm, on every path (tools,
// the OpenAI surface, response formats, tool results, worker mode); and a wasm trap, should one ever
// happen, leaves coded errors and a realm where the next load works.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { browserFor } from "./harness.mjs";

function reliabilityHelpers() {
  window.MINI = "/models/wisp-mini/manifest.json";
  // Schemas a page can build by accident or on purpose.
  window.schemas = () => {
    const cyclic = { type: "object", properties: {} };
    cyclic.properties.self = cyclic;
    const deep = (levels) => {
      let s = { type: "string" };
      for (let i = 0; i < levels; i++) s = { type: "object", properties: { a: s } };
      return s;
    };
    // Shares one child twice at every level: small in memory, 2^25 parts once written out.
    let doubling = { type: "string" };
    for (let i = 0; i < 25; i++) doubling = { type: "object", properties: { a: doubling, b: doubling } };
    return { cyclic, deep1000: deep(1000), deep5000: deep(5000), doubling, fits: deep(20) };
  };
}


const is = (got, code, pattern) => {
  assert.equal(typeof got, "object", `expected ${code}, got ${JSON.stringify(got)}`);
  assert.equal(got.name, "WispError", JSON.stringify(got));
  assert.equal(got.code, code, JSON.stringify(got));
  if (pattern) assert.match(got.message, pattern);
};

describe("reliability: schemas and values that cannot cross into wasm", () => {
  const browser = browserFor({ helpers: reliabilityHelpers });

  test("cyclic, deep and exponentially shared schemas are coded errors everywhere, and the realm stays usable", async () => {
    const r = await browser.page.evaluate(async () => {
      const { createAgent, createChatCompletions, Model } = await import("/pkg/index.js");
      const model = await Model.load({ bundle: MINI }, { backend: "cpu" });
      const agent = await createAgent({ model });
      const openai = createChatCompletions(model);
      const { cyclic, deep1000, deep5000, doubling, fits } = schemas();
      const out = {};
      for (const [name, parameters] of Object.entries({ cyclic, deep1000, deep5000, doubling })) {
        out[`tool_${name}`] = await attempt(() => agent.tool({ name: "t", description: "A tool.", parameters }, () => 1));
        out[`openai_${name}`] = await attempt(() =>
          openai.create({ messages: [{ role: "user", content: "hi" }], tools: [{ type: "function", function: { name: "t", parameters } }] }),
        );
        const responseFormat = { type: "json_schema", json_schema: { name: "x", schema: parameters } };
        out[`generate_${name}`] = await attempt(() => model.generate("hi", { responseFormat, maxTokens: 2 }));
        out[`run_${name}`] = await attempt(() => agent.run("hi", { responseFormat, maxTokens: 2 }));
        out[`openai_format_${name}`] = await attempt(() =>
          openai.create({ messages: [{ role: "user", content: "hi" }], response_format: responseFormat, max_tokens: 2 }),
        );
        out[`render_${name}`] = await attempt(() => model.renderChat([{ role: "user", content: "hi" }], { tools: [{ name: "t", parameters }] }));
      }
      // A tool whose result nests too deep: the model gets an error message, the run goes on.
      agent.tool({ name: "fits", description: "A tool with a 41-level schema.", parameters: fits }, () => 1);
      agent.tool({ name: "deep_result", description: "Returns a deep value.", parameters: { type: "object", properties: {} } }, () => schemas().deep1000);
      const deepResult = await agent.run("Call deep_result.", { toolChoice: "deep_result", maxSteps: 2, maxTokens: 48 });
      out.deepResult = deepResult.toolCalls.map((c) => c.error);
      // The same model, agent and surface still work, and so does a new load.
      out.afterwards = (await model.generate("Hello", { maxTokens: 3 })).tokens.length;
      out.agentAfterwards = (await agent.run("Hello!", { maxTokens: 4, toolChoice: "none" })).finishReason;
      const again = await Model.load({ bundle: MINI }, { backend: "cpu" });
      out.newLoad = (await again.generate("Hello", { maxTokens: 3 })).tokens.length;
      out.alive = model.alive && again.alive;
      again.close();
      agent.close();
      model.close();
      out.unhandled = unhandled;
      return out;
    });
    for (const name of ["cyclic", "deep1000", "deep5000", "doubling"]) {
      const why = { cyclic: /contains itself \(a cycle\)/, deep1000: /nested more than 64 levels/, deep5000: /nested more than 64 levels/, doubling: /more than 1000000 parts/ }[name];
      is(r[`tool_${name}`], "INVALID_TOOL", why);
      is(r[`openai_${name}`], "INVALID_TOOL", why);
      is(r[`generate_${name}`], "RESPONSE_FORMAT", why);
      is(r[`run_${name}`], "RESPONSE_FORMAT", why);
      is(r[`openai_format_${name}`], "RESPONSE_FORMAT", why);
      is(r[`render_${name}`], "INVALID_TOOL", why);
    }
    assert.equal(r.deepResult.length, 1);
    assert.match(r.deepResult[0], /nested more than 64 levels/);
    assert.equal(r.afterwards, 3);
    assert.ok(["stop", "eos_token", "length"].includes(r.agentAfterwards), r.agentAfterwards);
    assert.equal(r.newLoad, 3);
    assert.equal(r.alive, true);
    assert.deepEqual(r.unhandled, []);
  });

  test("in worker mode too, and the worker keeps serving", async () => {
    const r = await browser.page.evaluate(async () => {
      const { createAgent, WorkerModel } = await import("/pkg/index.js");
      const model = await WorkerModel.load({ bundle: MINI }, { backend: "cpu" });
      const agent = await createAgent({ model });
      const { cyclic, deep5000 } = schemas();
      const out = {};
      out.tool = await attempt(() => agent.tool({ name: "t", description: "A tool.", parameters: cyclic }, () => 1));
      const responseFormat = { type: "json_schema", json_schema: { name: "x", schema: deep5000 } };
      out.generate = await attempt(() => model.generate("hi", { responseFormat, maxTokens: 2 }));
      out.run = await attempt(() => agent.run("hi", { responseFormat: { type: "json_schema", json_schema: { name: "x", schema: cyclic } } }));
      out.afterwards = (await model.generate("Hello", { maxTokens: 3 })).tokens.length;
      agent.close();
      model.close();
      return out;
    });
    is(r.tool, "INVALID_TOOL", /cycle/);
    is(r.generate, "RESPONSE_FORMAT", /nested more than 64 levels/);
    is(r.run, "RESPONSE_FORMAT", /cycle/);
    assert.equal(r.afterwards, 3);
  });

  test("a wasm trap marks the instance dead: coded errors from then on, and the next load starts afresh", async () => {
    const r = await browser.page.evaluate(async () => {
      const { createAgent, Model } = await import("/pkg/index.js");
      const model = await Model.load({ bundle: MINI }, { backend: "cpu" });
      const agent = await createAgent({ model });
      const other = await Model.load({ bundle: MINI }, { backend: "cpu" });
      // A schema that lies: empty while the package checks it, endlessly deep when wasm reads it. No check
      // made before crossing can see that, so the module's stack overflows: the trap this test needs.
      let enumerations = 0;
      const endless = () =>
        new Proxy({}, {
          ownKeys: () => (enumerations++ === 0 ? [] : ["a"]),
          getOwnPropertyDescriptor: () => ({ value: endless(), enumerable: true, configurable: true }),
          get: (_, key) => (key === "a" ? endless() : undefined),
        });
      const out = {};
      out.trap = await attempt(() => agent.tool({ name: "t", description: "A tool.", parameters: { type: "object", properties: endless() } }, () => 1));
      out.model = await attempt(() => model.generate("Hello", { maxTokens: 2 }));
      out.agent = await attempt(() => agent.run("Hello"));
      out.other = await attempt(() => other.generate("Hello", { maxTokens: 2 }));
      out.alive = [model.alive, other.alive];
      agent.close();
      model.close();
      other.close();
      const fresh = await Model.load({ bundle: MINI }, { backend: "cpu" });
      const freshAgent = await createAgent({ model: fresh });
      out.fresh = (await fresh.generate("Hello", { maxTokens: 3 })).tokens.length;
      freshAgent.tool({ name: "ping", description: "Answers pong.", parameters: { type: "object", properties: {} } }, () => "pong");
      out.freshRun = (await freshAgent.run("Ping.", { toolChoice: "ping", maxSteps: 1 })).toolCalls.map((c) => c.result);
      freshAgent.close();
      fresh.close();
      out.unhandled = unhandled;
      return out;
    });
    is(r.trap, "WASM_CRASHED", /crashed/);
    is(r.model, "WASM_CRASHED", /load the model again/);
    is(r.agent, "WASM_CRASHED");
    is(r.other, "WASM_CRASHED");
    assert.deepEqual(r.alive, [false, false]);
    assert.equal(r.fresh, 3);
    assert.deepEqual(r.freshRun, ["pong"]);
    assert.deepEqual(r.unhandled, []);
  });
});

describe("reliability: one model shared by many callers", () => {
  const browser = browserFor({ helpers: reliabilityHelpers });

  test("20 agents and two generate calls on one model all finish, in arrival order; aborts leave the queue", async () => {
    const r = await browser.page.evaluate(async () => {
      const { createAgent, Model } = await import("/pkg/index.js");
      const model = await Model.load({ bundle: MINI }, { backend: "cpu" });
      const noArgs = { type: "object", properties: {} };
      const agents = [];
      for (let i = 0; i < 20; i++) {
        const agent = await createAgent({ model });
        agent.tool({ name: "ping", description: "Answers pong.", parameters: noArgs }, async () => `pong ${i}`);
        agents.push(agent);
      }
      const order = [];
      const runs = agents.map((agent, i) =>
        agent.run("Ping.", { toolChoice: "ping", maxSteps: 2, maxTokens: 48 }).then((x) => (order.push(i), x)),
      );
      // Two generations beside them, and one that gives up while it waits.
      const alone = await model.generate("Hello there", { maxTokens: 6 });
      const a = model.generate("Hello there", { maxTokens: 6 });
      const b = model.generate("Hello there", { maxTokens: 6 });
      const controller = new AbortController();
      const gaveUp = attempt(() => model.generate("Hello there", { maxTokens: 6, signal: controller.signal }));
      controller.abort();
      const busy = await attempt(() => model.generate("Hello there", { maxTokens: 6, wait: false }));
      const results = await Promise.all(runs);
      const out = {
        order,
        results: results.map((x) => x.toolCalls.map((c) => c.result)),
        finish: results.map((x) => x.finishReason),
        same: [(await a).tokens, (await b).tokens].map((t) => JSON.stringify(t) === JSON.stringify(alone.tokens)),
        gaveUp: await gaveUp,
        busy,
      };
      for (const agent of agents) agent.close();
      model.close();
      out.unhandled = unhandled;
      return out;
    });
    assert.deepEqual(r.order, [...Array(20).keys()]);
    assert.deepEqual(r.results, [...Array(20).keys()].map((i) => [`pong ${i}`]));
    assert.ok(r.finish.every((f) => ["stop", "eos_token", "length", "max_steps"].includes(f)), JSON.stringify(r.finish));
    assert.deepEqual(r.same, [true, true]);
    assert.equal(r.gaveUp.name, "AbortError");
    is(r.busy, "BUSY", /the model is serving another call/);
    assert.deepEqual(r.unhandled, []);
  });

  test("agents sharing a worker model take turns too", async () => {
    const r = await browser.page.evaluate(async () => {
      const { createAgent, WorkerModel } = await import("/pkg/index.js");
      const model = await WorkerModel.load({ bundle: MINI }, { backend: "cpu" });
      const noArgs = { type: "object", properties: {} };
      const agents = await Promise.all([0, 1, 2].map(() => createAgent({ model })));
      agents.forEach((agent, i) => agent.tool({ name: "ping", description: "Answers pong.", parameters: noArgs }, () => `pong ${i}`));
      const results = await Promise.all(agents.map((agent) => agent.run("Ping.", { toolChoice: "ping", maxSteps: 2, maxTokens: 48 })));
      const generated = await Promise.all([model.generate("Hi", { maxTokens: 4 }), model.generate("Hi", { maxTokens: 4 })]);
      for (const agent of agents) agent.close();
      model.close();
      return { results: results.map((x) => x.toolCalls.map((c) => c.result)), generated: generated.map((g) => g.tokens.length) };
    });
    assert.deepEqual(r.results, [["pong 0"], ["pong 1"], ["pong 2"]]);
    assert.deepEqual(r.generated, [4, 4]);
  });
});

describe("reliability: the model cache revalidates", () => {
  const browser = browserFor({ helpers: reliabilityHelpers });

  test("a broken deploy is never cached, a fix and a changed manifest reach the page, offline still works", async () => {
    const { page } = browser;
    const { readFile } = await import("node:fs/promises");
    const dir = new URL("../../models/wisp-mini/", import.meta.url);
    const manifest = JSON.parse(await readFile(new URL("manifest.json", dir), "utf8"));
    const good = await readFile(new URL("model.safetensors", dir));
    // The server's state, which each step changes: files by name, each with its ETag.
    const server = { down: false, files: {}, log: [] };
    const deploy = (name, body, etag) => (server.files[name] = { body, etag });
    for (const name of ["config.json", "tokenizer.json", "chat_template.jinja"]) deploy(name, await readFile(new URL(name, dir)), `"${name}-1"`);
    const withoutWeightHash = structuredClone(manifest);
    delete withoutWeightHash.files.weights.sha256;
    delete withoutWeightHash.files.weights.size;
    await page.route("**/virtual/mini/*", (route) => {
      const name = new URL(route.request().url()).pathname.split("/").pop();
      if (server.down) return route.abort("internetdisconnected");
      const file = server.files[name];
      if (!file) return route.fulfill({ status: 404, body: "not found" });
      const fresh = route.request().headers()["if-none-match"] === file.etag;
      server.log.push(`${name} ${fresh ? 304 : 200}`);
      if (fresh) return route.fulfill({ status: 304, headers: { etag: file.etag } });
      return route.fulfill({ status: 200, body: file.body, headers: { etag: file.etag, "content-type": "application/octet-stream" } });
    });
    const load = () =>
      page.evaluate(async () => {
        const { Model } = await import("/pkg/index.js");
        const cache = await caches.open("wisp-models-v1");
        const cached = async () => Boolean(await cache.match(new URL("/virtual/mini/model.safetensors", location.href).href));
        try {
          const model = await Model.load({ bundle: "/virtual/mini/manifest.json" }, { backend: "cpu" });
          const out = { name: model.manifest.name, tokens: (await model.generate("Hello", { maxTokens: 3 })).tokens.length };
          model.close();
          return { ...out, cached: await cached() };
        } catch (e) {
          return { code: e.code, message: e.message, cached: await cached() };
        }
      });
    const step = async () => {
      server.log = [];
      const r = await load();
      return { ...r, log: server.log };
    };

    // 1. A bad deploy: the weights are cut short. The load fails, and nothing of it stays cached.
    deploy("manifest.json", JSON.stringify(withoutWeightHash), '"m-1"');
    deploy("model.safetensors", good.subarray(0, good.length / 2), '"w-broken"');
    const broken = await step();
    assert.equal(broken.code, "INVALID_WEIGHTS", JSON.stringify(broken));
    assert.equal(broken.cached, false);

    // 2. The fix reaches the page at once.
    deploy("model.safetensors", good, '"w-1"');
    const fixed = await step();
    assert.deepEqual([fixed.name, fixed.tokens, fixed.cached], ["wisp-mini", 3, true], JSON.stringify(fixed));

    // 3. Loaded again online: the server is asked, says "unchanged", and the bytes come from the cache.
    const again = await step();
    assert.equal(again.tokens, 3);
    assert.ok(again.log.includes("model.safetensors 304"), again.log.join(", "));
    assert.ok(!again.log.includes("model.safetensors 200"), again.log.join(", "));

    // 4. A new manifest is seen by the next load (never served stale from the cache).
    deploy("manifest.json", JSON.stringify({ ...withoutWeightHash, name: "wisp-mini-2" }), '"m-2"');
    const updated = await step();
    assert.equal(updated.name, "wisp-mini-2", JSON.stringify(updated));

    // 5. Offline: everything from the cache.
    server.down = true;
    const offline = await step();
    assert.deepEqual([offline.name, offline.tokens], ["wisp-mini-2", 3], JSON.stringify(offline));
    server.down = false;

    // 6. A cached copy gone bad (the server still says "unchanged"): evicted, downloaded again, loaded.
    await page.evaluate(async () => {
      const cache = await caches.open("wisp-models-v1");
      const url = new URL("/virtual/mini/model.safetensors", location.href).href;
      await cache.put(url, new Response(new Uint8Array(100), { headers: { etag: '"w-1"' } }));
    });
    const healed = await step();
    assert.equal(healed.tokens, 3, JSON.stringify(healed));
    assert.ok(healed.log.includes("model.safetensors 200"), healed.log.join(", "));

    // 7. A manifest whose size is wrong for the file: refused, with both numbers.
    deploy("manifest.json", JSON.stringify({ ...manifest, files: { ...manifest.files, weights: { ...manifest.files.weights, size: 1234 } } }), '"m-3"');
    const wrongSize = await step();
    assert.equal(wrongSize.code, "HASH_MISMATCH", JSON.stringify(wrongSize));
    assert.match(wrongSize.message, new RegExp(`has ${good.length} bytes; the manifest says 1234`));
    await page.unroute("**/virtual/mini/*");
  });

  test("backend measurements are kept newest first, one per key; damaged ones read as none and never fail a load", async () => {
    const r = await browser.page.evaluate(async () => {
      const { Model, clearModelCache } = await import("/pkg/index.js");
      const { keepMeasured, readMeasured } = await import("/pkg/fetch.js");
      await clearModelCache();
      const out = { empty: await readMeasured() };
      await keepMeasured({ key: "gpu A; model 1", kind: "webgpu", figures: "4.0 ms on WebGPU, 9.0 ms on the CPU" });
      await keepMeasured({ key: "gpu A; model 2", kind: "cpu", figures: "9.0 ms on WebGPU, 4.0 ms on the CPU" });
      await keepMeasured({ key: "gpu A; model 1", kind: "cpu", figures: "8.0 ms on WebGPU, 5.0 ms on the CPU" });
      out.kept = await readMeasured();
      // Entries of other keys go to the core with every load; this one runs on SwiftShader (a fallback
      // adapter: the CPU without measuring), so none applies and none is added.
      const model = await Model.load({ bundle: "/models/wisp-mini/manifest.json" });
      out.backend = model.backend;
      model.close();
      out.after = (await readMeasured()).length;
      const cache = await caches.open("wisp-models-v1");
      const url = "https://wisp.invalid/backend-measurements.json";
      await cache.put(url, new Response('[{"key": 1}, {"key": "k", "kind": "tpu", "figures": "", "at": ""}, {"key": "k", "kind": "cpu", "figures": "f", "at": "t", "extra": 1}]'));
      out.filtered = await readMeasured();
      await cache.put(url, new Response("not json"));
      out.damaged = await readMeasured();
      const again = await Model.load({ bundle: "/models/wisp-mini/manifest.json" });
      out.againKind = again.backend.kind;
      again.close();
      await clearModelCache();
      out.cleared = await readMeasured();
      return out;
    });
    assert.deepEqual(r.empty, []);
    assert.deepEqual(r.kept.map((m) => [m.key, m.kind]), [["gpu A; model 1", "cpu"], ["gpu A; model 2", "cpu"]]);
    assert.ok(r.kept.every((m) => !Number.isNaN(Date.parse(m.at))), JSON.stringify(r.kept));
    assert.equal(r.backend.kind, "cpu");
    assert.equal(r.backend.measured, undefined);
    assert.match(r.backend.reason, /software fallback/);
    assert.equal(r.after, 2);
    assert.deepEqual(r.filtered, [{ key: "k", kind: "cpu", figures: "f", at: "t" }]);
    assert.deepEqual(r.damaged, []);
    assert.equal(r.againKind, "cpu");
    assert.deepEqual(r.cleared, []);
  });
});

describe("reliability: defaults that fit, options that are checked", () => {
  const browser = browserFor({ helpers: reliabilityHelpers });

  test("a 3 KB tool result fits the bundled model's context; bad numbers and a replaced tool are coded", async () => {
    const { page } = browser;
    const { readFile } = await import("node:fs/promises");
    const manifest = JSON.parse(await readFile(new URL("../../models/wisp-mini/manifest.json", import.meta.url), "utf8"));
    await page.route("**/models/wisp-mini/empty-stop.json", (route) => route.fulfill({ body: JSON.stringify({ ...manifest, stop: ["<|im_end|>", ""] }) }));
    const r = await page.evaluate(async () => {
      const { createAgent, Model } = await import("/pkg/index.js");
      const model = await Model.load({ bundle: MINI }, { backend: "cpu" });
      const agent = await createAgent({ model });
      const page3k = "Opening hours and prices of the city museum, room by room. ".repeat(52).slice(0, 3000);
      agent.tool({ name: "read_page", description: "Returns the text of the page.", parameters: { type: "object", properties: {} } }, () => page3k);
      const out = {};
      const run = await agent.run("Read the page for me.", { toolChoice: "read_page", maxSteps: 2 });
      out.long = { finish: run.finishReason, result: run.toolCalls[0]?.result?.length, note: /truncated: \d+ more characters/.test(agent.messages.find((m) => m.role === "tool")?.content ?? "") };
      out.timeout = await attempt(() => agent.tool({ name: "slow", description: "Slow.", timeoutMs: 2 ** 31 }, () => 1));
      out.timeoutOk = await attempt(() => agent.tool({ name: "slow", description: "Slow.", timeoutMs: 2 ** 31 - 1 }, () => 1));
      out.resultTokens = await attempt(() => createAgent({ model, maxResultTokens: 0 }));
      // The tool is replaced between the model's call and its run: the call was checked against the old
      // schema, so it is refused, not run with arguments the new one never saw.
      agent.tool({ name: "count", description: "Counts.", parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] } }, () => "old");
      const ran = [];
      const replaced = await agent.run("Count to 3.", {
        toolChoice: "count",
        maxSteps: 1,
        onEvent: (e) => {
          if (e.type !== "tool_call") return;
          agent.removeTool("count");
          agent.tool({ name: "count", description: "Counts.", parameters: { type: "object", properties: { word: { type: "string" } }, required: ["word"] } }, () => (ran.push("new"), "new"));
        },
      });
      out.replaced = { error: replaced.toolCalls[0]?.error, ran };
      agent.close();
      model.close();
      out.emptyStop = await attempt(() => Model.load({ bundle: "/models/wisp-mini/empty-stop.json" }, { backend: "cpu" }));
      out.chunk0 = await attempt(() => Model.load({ bundle: MINI }, { backend: "cpu", chunkLen: 0 }));
      out.chunk3 = await attempt(() => Model.load({ bundle: MINI }, { backend: "cpu", chunkLen: 3 }));
      out.tooLarge = await attempt(() => Model.load({ bundle: MINI }, { backend: "cpu", contextLen: 2 ** 30 }));
      out.unhandled = unhandled;
      return out;
    });
    assert.equal(r.long.result, 3000);
    assert.equal(r.long.note, true, "the result was cut to fit");
    assert.ok(["stop", "eos_token", "length", "max_steps"].includes(r.long.finish), JSON.stringify(r.long));
    is(r.timeout, "INVALID_TOOL", /timeoutMs of tool 'slow' is 2147483648/);
    assert.equal(r.timeoutOk, "resolved");
    is(r.resultTokens, "INVALID_REQUEST", /maxResultTokens is 0/);
    assert.equal(r.replaced.error, "the tool 'count' was replaced while it was being called; call it again");
    assert.deepEqual(r.replaced.ran, []);
    is(r.emptyStop, "INVALID_MANIFEST", /stop\[1\] is empty/);
    is(r.chunk0, "INVALID_REQUEST", /chunk_len is 0/);
    is(r.chunk3, "INVALID_REQUEST", /chunk_len is 3/);
    is(r.tooLarge, "MODEL_TOO_LARGE", /CPU backend/);
    assert.doesNotMatch(r.tooLarge.message, /GPU/);
    assert.deepEqual(r.unhandled, []);
  });
});
