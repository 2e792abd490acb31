// The AI SDK provider (wisp-agent/ai-sdk) under the real `ai` package, bundled by Vite for the page, against
// the bundled model on the CPU backend with the demo tools of www/tools.js, in page mode and worker mode:
// a multi-step generateText (a tool call, its result, the answer; the two-call weather -> conversion task),
// streamText's parts, toolChoice required / none / a named tool, abort, usage, generateObject, streamObject
// and Output.object (values valid for their schema), warnings and a coded error for input it cannot take.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { build } from "vite";
import { openBrowser } from "./harness.mjs";

const WEATHER = {
  type: "object",
  properties: {
    city: { type: "string", maxLength: 24 },
    temperature_c: { type: "number", minimum: -60, maximum: 60 },
    condition: { type: "string", enum: ["sunny", "rainy", "cloudy", "windy"] },
  },
  required: ["city", "temperature_c", "condition"],
  additionalProperties: false,
};

// Runs in the page: every check's raw outcome, for the assertions below.
async function scenario({ worker, schema }) {
  const { Model, WorkerModel } = await import("/pkg/index.js");
  const { wisp } = await import("/pkg/ai-sdk.js");
  const { generateText, streamText, generateObject, streamObject, stepCountIs, tool, jsonSchema, Output } = await import("/ai-bundle.js");
  const { demoTools } = await import("/www/tools.js");
  const load = { backend: "cpu", cache: false };
  const bundle = { bundle: "/models/wisp-mini/manifest.json" };
  const model = worker ? await WorkerModel.load(bundle, load) : await Model.load(bundle, load);
  const llm = wisp(model);
  const tools = Object.fromEntries(
    demoTools.map(([spec, fn]) => [spec.name, tool({ description: spec.description, inputSchema: jsonSchema(spec.parameters), execute: async (args) => fn(args) })]),
  );
  const system = "You are a helpful assistant.";
  const common = { model: llm, system, tools, temperature: 0, maxRetries: 0 };
  const calls = (steps) => steps.flatMap((s) => s.toolCalls.map((c) => [c.toolName, c.input]));
  const out = { modelId: llm.modelId, specificationVersion: llm.specificationVersion };
  try {
    wisp({ bundle: "/models/wisp-mini/manifest.json" });
    out.notModel = "returned";
  } catch (e) {
    out.notModel = { code: e.code, message: e.message };
  }
  try {
    const weather = await generateText({ ...common, prompt: "What's the weather like in Tokyo right now?", stopWhen: stepCountIs(3) });
    out.weather = {
      calls: calls(weather.steps),
      results: weather.steps.flatMap((s) => s.toolResults.map((r) => r.output)),
      text: weather.text,
      finishReason: weather.finishReason,
      steps: weather.steps.length,
      usage: weather.totalUsage,
      stepUsage: weather.steps.map((s) => s.usage),
      warnings: weather.steps.flatMap((s) => s.warnings ?? []),
    };
    const chain = await generateText({ ...common, prompt: "What's the temperature in Berlin in fahrenheit?", stopWhen: stepCountIs(4) });
    out.chain = { calls: calls(chain.steps), text: chain.text, steps: chain.steps.length };

    const stream = streamText({ ...common, prompt: "How is the weather in New York?", stopWhen: stepCountIs(3) });
    out.parts = [];
    for await (const part of stream.fullStream) out.parts.push(part.type === "text-delta" ? { type: part.type, text: part.text } : { type: part.type, toolName: part.toolName, input: part.input });
    out.streamText = await stream.text;
    out.streamUsage = await stream.totalUsage;

    const required = await generateText({ ...common, prompt: "Hello there!", toolChoice: "required" });
    out.required = { calls: calls(required.steps), finishReason: required.finishReason };
    const none = await generateText({ ...common, prompt: "What's the weather like in Tokyo right now?", toolChoice: "none", maxOutputTokens: 40 });
    out.none = { calls: calls(none.steps), text: none.text, finishReason: none.finishReason };
    const named = await generateText({ ...common, prompt: "What's the weather like in Tokyo right now?", toolChoice: { type: "tool", toolName: "calculate" } });
    out.named = { calls: calls(named.steps) };

    // Abort: once generation has begun, and while waiting for the model behind another call; each rejects
    // with the signal's reason, and the call ahead is untouched.
    const settle = (p) => p.then((r) => ({ resolved: r.usage.outputTokens }), (e) => ({ name: e.name, message: e.message }));
    const controller = new AbortController();
    const aborted = settle(generateText({ ...common, prompt: "Tell me a long story about the sea.", toolChoice: "none", maxOutputTokens: 400, abortSignal: controller.signal }));
    setTimeout(() => controller.abort(new DOMException("the user stopped it", "AbortError")), 0);
    out.abort = await aborted;
    const ahead = settle(generateText({ ...common, prompt: "Tell me a long story about the sea.", toolChoice: "none", maxOutputTokens: 40 }));
    const queuedController = new AbortController();
    const queued = settle(generateText({ ...common, prompt: "Hi", abortSignal: queuedController.signal }));
    setTimeout(() => queuedController.abort(), 0);
    out.queued = await queued;
    out.ahead = await ahead;
    const streamController = new AbortController();
    const abortedStream = streamText({ ...common, prompt: "Tell me a long story about the sea.", toolChoice: "none", maxOutputTokens: 400, abortSignal: streamController.signal });
    out.streamAbort = [];
    try {
      for await (const part of abortedStream.fullStream) {
        out.streamAbort.push(part.type);
        if (part.type === "text-delta") streamController.abort();
      }
    } catch (e) {
      out.streamAbort.push(`threw ${e.name}`);
    }
    const after = await generateText({ ...common, prompt: "What is 12 * (3 + 4)?", stopWhen: stepCountIs(2) });
    out.afterAbort = calls(after.steps);

    const objects = [];
    for (const prompt of ["Weather report for Lima, please.", "Describe the weather in Tokyo as JSON."]) {
      const { object, finishReason, usage } = await generateObject({ model: llm, schema: jsonSchema(schema), prompt, temperature: 0, maxRetries: 0 });
      objects.push({ object, finishReason, outputTokens: usage.outputTokens });
    }
    out.objects = objects;
    const streamed = streamObject({ model: llm, schema: jsonSchema(schema), prompt: "What's the weather in Cairo?", temperature: 0, maxRetries: 0 });
    let partials = 0;
    for await (const partial of streamed.partialObjectStream) if (partial) partials++;
    out.streamed = { object: await streamed.object, partials };
    const { output } = await generateText({ model: llm, output: Output.object({ schema: jsonSchema(schema) }), prompt: "Is it windy in Oslo?", temperature: 0.8, maxRetries: 0 });
    out.output = output;

    // Straight to the specification object: what it cannot honour comes back as warnings.
    const direct = await llm.doGenerate({
      prompt: [{ role: "user", content: [{ type: "text", text: "Hi" }] }],
      tools: [{ type: "provider", id: "openai.web_search", name: "web_search", args: {} }],
      reasoning: "high",
      maxOutputTokens: 8,
    });
    out.warnings = direct.warnings;
    out.file = await generateText({
      model: llm,
      maxRetries: 0,
      messages: [{ role: "user", content: [{ type: "file", data: new Uint8Array([1, 2, 3]), mediaType: "application/octet-stream" }] }],
    }).then(
      () => "resolved",
      (e) => ({ name: e.name, code: e.code, message: e.message }),
    );
    out.badChoice = await generateText({ ...common, prompt: "Hi", toolChoice: { type: "tool", toolName: "launch_rocket" } }).then(
      () => "resolved",
      (e) => ({ name: e.name, code: e.code, message: e.message }),
    );
  } finally {
    model.close();
  }
  return out;
}

// Every problem of a value against WEATHER (node_modules has no JSON Schema validator).
function problems(value) {
  const out = [];
  if (typeof value !== "object" || value === null || Array.isArray(value)) return ["not an object"];
  for (const key of Object.keys(value)) if (!(key in WEATHER.properties)) out.push(`unknown key ${key}`);
  for (const key of WEATHER.required) if (!(key in value)) out.push(`missing ${key}`);
  if ("city" in value && (typeof value.city !== "string" || value.city.length > 24)) out.push("city");
  const t = value.temperature_c;
  if ("temperature_c" in value && (typeof t !== "number" || t < -60 || t > 60)) out.push("temperature_c");
  if ("condition" in value && !WEATHER.properties.condition.enum.includes(value.condition)) out.push("condition");
  return out;
}

const DEMO_TOOLS = new Set(["get_weather", "get_time", "calculate", "convert_units", "add_note", "list_notes"]);

describe("the AI SDK provider with the real ai package", () => {
  let browser;
  let bundle;
  before(async () => {
    // `ai` and its dependencies as one ES module, served to the page at /ai-bundle.js.
    const built = await build({
      configFile: false,
      logLevel: "warn",
      build: { write: false, lib: { entry: new URL("./ai-entry.js", import.meta.url).pathname, formats: ["es"], fileName: "ai" } },
    });
    bundle = (Array.isArray(built) ? built[0] : built).output[0].code;
    browser = await openBrowser({ webgpu: false });
    await browser.page.route("**/ai-bundle.js", (route) => route.fulfill({ body: bundle, contentType: "text/javascript" }));
  });
  after(async () => {
    await browser?.close();
  });

  for (const worker of [false, true]) {
    test(worker ? "worker mode" : "page mode", async (t) => {
      const r = await browser.page.evaluate(scenario, { worker, schema: WEATHER });
      t.diagnostic(JSON.stringify({ weather: r.weather, chain: r.chain, abort: r.abort, queued: r.queued, streamAbort: r.streamAbort, objects: r.objects, streamed: r.streamed, output: r.output }));
      assert.equal(r.specificationVersion, "v4");
      assert.equal(r.modelId, "wisp-mini");
      assert.equal(r.notModel.code, "INVALID_REQUEST", JSON.stringify(r.notModel));

      // Multi-step: the call, the tool's real result, an answer that states it.
      assert.deepEqual(r.weather.calls, [["get_weather", { city: "Tokyo" }]]);
      assert.equal(r.weather.results[0].temperature_c, 22);
      assert.equal(r.weather.steps, 2);
      assert.ok(r.weather.text.includes("22"), r.weather.text);
      assert.equal(r.weather.finishReason, "stop");
      // An ordinary call has nothing to warn about (the user-agent header the AI SDK always sends included).
      assert.deepEqual(r.weather.warnings, []);
      assert.ok(r.weather.stepUsage.every((u) => u.inputTokens > 0 && u.outputTokens > 0), JSON.stringify(r.weather.stepUsage));
      assert.equal(r.weather.usage.inputTokens, r.weather.stepUsage[0].inputTokens + r.weather.stepUsage[1].inputTokens);
      // The second step replays the first: the KV cache holds its prefix.
      assert.ok(r.weather.stepUsage[1].inputTokenDetails.cacheReadTokens > 0, JSON.stringify(r.weather.stepUsage[1]));
      assert.deepEqual(r.chain.calls, [
        ["get_weather", { city: "Berlin" }],
        ["convert_units", { value: 10, from: "celsius", to: "fahrenheit" }],
      ]);
      assert.ok(r.chain.text.includes("50"), r.chain.text);

      // Streaming: tool input and call parts, the result, text-start/delta/end, finish with usage.
      const types = r.parts.map((p) => p.type);
      for (const type of ["start", "start-step", "tool-input-start", "tool-input-delta", "tool-input-end", "tool-call", "tool-result", "finish-step", "text-start", "text-delta", "text-end", "finish"]) {
        assert.ok(types.includes(type), `${type} in ${types.join(",")}`);
      }
      assert.ok(types.indexOf("tool-call") < types.indexOf("tool-result") && types.indexOf("tool-result") < types.indexOf("text-start"));
      assert.deepEqual(r.parts.find((p) => p.type === "tool-call").input, { city: "New York" });
      assert.equal(r.parts.filter((p) => p.type === "text-delta").map((p) => p.text).join(""), r.streamText);
      assert.ok(r.streamText.includes("15"), r.streamText);
      assert.ok(r.streamUsage.inputTokens > 0 && r.streamUsage.outputTokens > 0);

      // toolChoice: required forces a call (valid for its tool's schema), none shows no tools, a name forces that tool.
      assert.equal(r.required.finishReason, "tool-calls");
      assert.ok(r.required.calls.length >= 1);
      for (const [name, input] of r.required.calls) {
        assert.ok(DEMO_TOOLS.has(name), name);
        assert.equal(typeof input, "object");
      }
      assert.deepEqual(r.none.calls, []);
      assert.ok(r.none.text.trim().length > 0);
      assert.equal(r.named.calls.length, 1);
      assert.equal(r.named.calls[0][0], "calculate");
      assert.equal(typeof r.named.calls[0][1].expression, "string");

      // Abort: rejected with the reason, long before 400 tokens; the stream ends; the model serves the next call.
      assert.equal(r.abort.name, "AbortError", JSON.stringify(r.abort));
      assert.equal(r.abort.message, "the user stopped it");
      assert.equal(r.queued.name, "AbortError", JSON.stringify(r.queued));
      assert.ok(r.ahead.resolved > 0, JSON.stringify(r.ahead));
      assert.ok(r.streamAbort.includes("abort") || r.streamAbort.some((s) => s.startsWith("threw AbortError")), r.streamAbort.join(","));
      assert.ok(!r.streamAbort.includes("finish-step"), r.streamAbort.join(","));
      assert.deepEqual(r.afterAbort, [["calculate", { expression: "12 * (3 + 4)" }]]);

      // Structured output: every object valid for the schema (grammar-constrained).
      assert.ok(r.streamed.partials > 1, `${r.streamed.partials} partial objects`);
      for (const o of [...r.objects.map((x) => x.object), r.output, r.streamed.object]) assert.deepEqual(problems(o), [], JSON.stringify(o));
      assert.ok(r.objects.every((o) => o.finishReason === "stop" && o.outputTokens > 0));

      assert.deepEqual(r.warnings.map((w) => w.feature), ["provider tool openai.web_search", "reasoning"]);
      assert.equal(r.file.code, "INVALID_REQUEST", JSON.stringify(r.file));
      assert.match(r.file.message, /only text parts are supported/);
      assert.equal(r.badChoice.code, "INVALID_REQUEST", JSON.stringify(r.badChoice));
    });
  }
});
