// The Vercel AI SDK provider (`wisp-agent/ai-sdk`) with the real `ai` package (pinned in package.json),
// bundled by Vite into a page (tests/bundler/ai-sdk-app/), against the bundled model, on the page and in
// worker mode: generateText with a tool over several steps (stopWhen), streamText's parts, toolChoice,
// abort, usage, and structured output (generateObject and Output.object). The calls the model writes are
// constrained by Wisp's grammar, so each is valid for its tool's schema.
import assert from "node:assert/strict";
import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";
import { build } from "vite";
import { chromium } from "playwright-core";
import { serve } from "../../tools/serve.mjs";
import { BASE_FLAGS, CHROMIUM } from "./harness.mjs";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

describe("Vercel AI SDK provider", () => {
  let dir;
  let server;
  let browser;
  let page;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "wisp-ai-sdk-"));
    // `ai` resolves from the repository's node_modules; wisp-agent is the built package.
    await build({
      root: join(ROOT, "tests/bundler/ai-sdk-app"),
      base: "./",
      logLevel: "warn",
      resolve: { alias: { "wisp-agent": join(ROOT, "pkg") } },
      build: { outDir: dir, emptyOutDir: true },
    });
    await cp(join(ROOT, "models/wisp-mini"), join(dir, "models/wisp-mini"), { recursive: true });
    server = await serve(0, dir);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: BASE_FLAGS });
    page = await browser.newPage();
    await page.goto(`${server.url}/index.html`);
    await page.waitForFunction(() => window.ready);
    await page.evaluate(async () => {
      const { Model, WorkerModel, jsonSchema, tool } = window.sdk;
      const source = { bundle: new URL("models/wisp-mini/manifest.json", location.href).href };
      window.models = { page: await Model.load(source, { backend: "cpu" }), worker: await WorkerModel.load(source, { backend: "cpu" }) };
      window.ran = [];
      window.weather = tool({
        description: "Get the current weather for a city.",
        inputSchema: jsonSchema({ type: "object", properties: { city: { type: "string" } }, required: ["city"], additionalProperties: false }),
        execute: async ({ city }) => (window.ran.push(city), { city, temperature_c: 18, condition: "sunny" }),
      });
    });
  });
  after(async () => {
    await page?.evaluate(() => Object.values(window.models ?? {}).forEach((m) => m.close())).catch(() => {});
    await browser?.close();
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  for (const mode of ["page", "worker"]) {
    test(`${mode}: generateText calls the tool, reads its result and answers (stopWhen), with usage`, async () => {
      const r = await page.evaluate(async (mode) => {
        const { generateText, stepCountIs, wisp } = window.sdk;
        window.ran = [];
        const result = await generateText({
          model: wisp(window.models[mode]),
          system: "You are a helpful assistant.",
          prompt: "What's the weather in Paris?",
          tools: { get_weather: window.weather },
          stopWhen: stepCountIs(3),
        });
        return {
          text: result.text,
          steps: result.steps.map((s) => ({ finish: s.finishReason, calls: s.toolCalls.map((c) => [c.toolName, c.input]) })),
          usage: result.totalUsage,
          ran: window.ran,
        };
      }, mode);
      assert.deepEqual(r.steps[0].calls, [["get_weather", { city: "Paris" }]]);
      assert.equal(r.steps[0].finish, "tool-calls");
      assert.deepEqual(r.ran, ["Paris"]);
      assert.equal(r.steps.at(-1).finish, "stop");
      assert.match(r.text, /18/);
      assert.ok(r.usage.inputTokens > 0 && r.usage.outputTokens > 0, JSON.stringify(r.usage));
    });
  }

  test("streamText: text deltas, a tool call and its result, and finish parts, in order", async () => {
    const r = await page.evaluate(async () => {
      const { streamText, stepCountIs, wisp } = window.sdk;
      const result = streamText({
        model: wisp(window.models.page),
        prompt: "What's the weather in Tokyo?",
        tools: { get_weather: window.weather },
        stopWhen: stepCountIs(3),
      });
      const types = [];
      let text = "";
      for await (const part of result.fullStream) {
        types.push(part.type);
        if (part.type === "text-delta") text += part.text;
      }
      return { types, text, final: await result.text };
    });
    const at = (t) => r.types.indexOf(t);
    assert.ok(at("tool-call") >= 0 && at("tool-result") > at("tool-call"), r.types.join(","));
    assert.ok(r.types.lastIndexOf("text-delta") > at("tool-result"), r.types.join(","));
    assert.equal(r.types.at(-1), "finish");
    assert.equal(r.text, r.final);
    assert.ok(r.final.length > 0);
  });

  test("toolChoice: required makes a call, none makes none, a named tool is that tool", async () => {
    const r = await page.evaluate(async () => {
      const { generateText, tool, jsonSchema, wisp } = window.sdk;
      const tools = {
        get_weather: window.weather,
        get_time: tool({ description: "The time in a city.", inputSchema: jsonSchema({ type: "object", properties: { city: { type: "string" } }, required: ["city"] }), execute: async () => "noon" }),
      };
      const once = async (toolChoice, prompt) => {
        const result = await generateText({ model: wisp(window.models.page), prompt, tools, toolChoice });
        return result.steps[0].toolCalls.map((c) => c.toolName);
      };
      return {
        required: await once("required", "Hello there!"),
        none: await once("none", "What's the weather in Paris?"),
        named: await once({ type: "tool", toolName: "get_time" }, "What's the weather in Paris?"),
      };
    });
    assert.ok(r.required.length >= 1);
    assert.deepEqual(r.none, []);
    assert.deepEqual([...new Set(r.named)], ["get_time"]);
  });

  test("structured output: generateObject and Output.object give objects valid for the schema", async () => {
    const r = await page.evaluate(async () => {
      const { generateObject, generateText, Output, jsonSchema, wisp } = window.sdk;
      const schema = jsonSchema({
        type: "object",
        properties: { city: { type: "string", maxLength: 20 }, temperature_c: { type: "integer", minimum: -50, maximum: 50 } },
        required: ["city", "temperature_c"],
        additionalProperties: false,
      });
      const object = (await generateObject({ model: wisp(window.models.page), schema, prompt: "Describe Paris's weather as JSON." })).object;
      const output = (await generateText({ model: wisp(window.models.worker), output: Output.object({ schema }), prompt: "Describe Oslo's weather as JSON." })).output;
      return { object, output };
    });
    for (const value of [r.object, r.output]) {
      assert.equal(typeof value.city, "string");
      assert.ok(Number.isInteger(value.temperature_c) && value.temperature_c >= -50 && value.temperature_c <= 50, JSON.stringify(value));
      assert.deepEqual(Object.keys(value).sort(), ["city", "temperature_c"]);
    }
  });

  test("abort: an aborted stream ends with the abort, and the model serves the next call", async () => {
    const r = await page.evaluate(async () => {
      const { streamText, generateText, wisp } = window.sdk;
      const controller = new AbortController();
      const result = streamText({ model: wisp(window.models.page), prompt: "Tell me a long story about a dragon.", abortSignal: controller.signal, maxOutputTokens: 200 });
      let deltas = 0;
      let error = null;
      try {
        for await (const part of result.fullStream) {
          if (part.type === "text-delta" && ++deltas === 3) controller.abort(new Error("enough"));
          if (part.type === "error") error = String(part.error?.message ?? part.error);
          if (part.type === "abort") error = "abort";
        }
      } catch (e) {
        error = String(e?.message ?? e);
      }
      const next = await generateText({ model: wisp(window.models.page), prompt: "Hi!", maxOutputTokens: 8 });
      return { deltas, error, next: next.usage.outputTokens };
    });
    assert.ok(r.error, "the stream reported the abort");
    assert.ok(r.deltas < 200);
    assert.ok(r.next > 0);
  });

  test("unsupported input is a coded error; unsupported settings are warnings", async () => {
    const r = await page.evaluate(async () => {
      const { generateText, wisp } = window.sdk;
      const model = wisp(window.models.page);
      const image = await model
        .doGenerate({ prompt: [{ role: "user", content: [{ type: "file", mediaType: "image/png", data: new Uint8Array(4) }] }] })
        .then(() => "resolved", (e) => e.code);
      const result = await generateText({ model, prompt: "Hi!", maxOutputTokens: 4, headers: { "x-test": "1" } });
      return { image, warnings: result.warnings?.map((w) => w.feature) ?? [] };
    });
    assert.equal(r.image, "INVALID_REQUEST");
    assert.deepEqual(r.warnings, ["headers"]);
  });
});
