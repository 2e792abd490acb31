// The OpenAI-compatible surface, through the official `openai` SDK (from node_modules) pointed at the
// in-page model with `openaiFetch`: a tool call, the round trip with its result, streaming (text and
// `delta.tool_calls`), OpenAI-shaped errors, and `response_format` (JSON content valid for the schema,
// alone or beside tools; `Model.generate`'s `responseFormat` too). The bundled model on the CPU backend.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { openBrowser } from "./harness.mjs";

describe("OpenAI SDK against the on-device model", () => {
  let browser;
  before(async () => {
    browser = await openBrowser();
  });
  after(async () => {
    await browser?.close();
  });

  test("tool call, round trip, streaming and errors", async () => {
    const r = await browser.page.evaluate(async () => {
      const { Model, openaiFetch } = await import("/pkg/index.js");
      const { default: OpenAI } = await import("/node_modules/openai/index.mjs");
      const model = await Model.load({ bundle: "/models/wisp-mini/manifest.json" }, { backend: "cpu", cache: false });
      const client = new OpenAI({ apiKey: "local", baseURL: "http://wisp.local/v1", fetch: openaiFetch(model), dangerouslyAllowBrowser: true });
      const tools = [
        {
          type: "function",
          function: {
            name: "get_weather",
            description: "Get the current weather for a city.",
            parameters: { type: "object", properties: { city: { type: "string", description: "City name" } }, required: ["city"] },
          },
        },
      ];
      const messages = [{ role: "user", content: "What's the weather in Paris?" }];
      const out = {};
      out.first = await client.chat.completions.create({ model: "wisp-mini", messages, tools, tool_choice: "required", temperature: 0, max_tokens: 48 });
      const call = out.first.choices[0].message.tool_calls?.[0];
      if (call) {
        const followUp = [
          ...messages,
          out.first.choices[0].message,
          { role: "tool", tool_call_id: call.id, content: JSON.stringify({ city: "Paris", temperature_c: 18, condition: "sunny" }) },
        ];
        const stream = await client.chat.completions.create({ model: "wisp-mini", messages: followUp, tools, temperature: 0, max_tokens: 48, stream: true });
        out.chunks = [];
        for await (const c of stream) out.chunks.push(c);
      }
      const streamedCall = await client.chat.completions.create({ model: "wisp-mini", messages, tools, tool_choice: "required", temperature: 0, max_tokens: 48, stream: true });
      out.callChunks = [];
      for await (const c of streamedCall) out.callChunks.push(c);
      try {
        await client.chat.completions.create({ model: "wisp-mini", messages: [{ role: "wizard", content: "hi" }] });
        out.badRole = "resolved";
      } catch (e) {
        out.badRole = { status: e.status, message: e.message, name: e.constructor.name };
      }
      model.close();
      return out;
    });
    const first = r.first.choices[0];
    assert.equal(r.first.object, "chat.completion");
    assert.equal(first.finish_reason, "tool_calls", JSON.stringify(r.first));
    const call = first.message.tool_calls[0];
    assert.equal(call.type, "function");
    assert.equal(call.function.name, "get_weather");
    assert.equal(typeof JSON.parse(call.function.arguments).city, "string");
    assert.ok(r.first.usage.prompt_tokens > 0 && r.first.usage.completion_tokens > 0);

    assert.equal(r.chunks[0].object, "chat.completion.chunk");
    assert.equal(r.chunks[0].choices[0].delta.role, "assistant");
    const text = r.chunks.map((c) => c.choices[0].delta.content ?? "").join("");
    assert.ok(text.trim().length > 0, JSON.stringify(r.chunks));
    assert.match(r.chunks.at(-1).choices[0].finish_reason, /^(stop|length|tool_calls)$/);

    const deltas = r.callChunks.flatMap((c) => c.choices[0].delta.tool_calls ?? []);
    assert.equal(deltas[0].function.name, "get_weather");
    assert.equal(r.callChunks.at(-1).choices[0].finish_reason, "tool_calls");

    assert.equal(r.badRole.status, 400);
    assert.match(r.badRole.message, /unknown role "wizard"/);
  });

  // The answer schema, and a check of a value against it written for this schema (node_modules has no
  // JSON Schema validator): every problem, so a failure says all that is wrong.
  const weather = {
    type: "object",
    properties: {
      city: { type: "string", maxLength: 24 },
      temperature_c: { type: "number", minimum: -60, maximum: 60 },
      condition: { type: "string", enum: ["sunny", "rainy", "cloudy", "windy"] },
      windy: { type: "boolean" },
    },
    required: ["city", "temperature_c", "condition"],
    additionalProperties: false,
  };
  function problems(value) {
    const out = [];
    if (typeof value !== "object" || value === null || Array.isArray(value)) return ["not an object"];
    for (const key of Object.keys(value)) if (!(key in weather.properties)) out.push(`unknown key ${key}`);
    for (const key of weather.required) if (!(key in value)) out.push(`missing ${key}`);
    if ("city" in value && (typeof value.city !== "string" || value.city.length > 24)) out.push("city");
    const t = value.temperature_c;
    if ("temperature_c" in value && (typeof t !== "number" || t < -60 || t > 60)) out.push("temperature_c");
    if ("condition" in value && !weather.properties.condition.enum.includes(value.condition)) out.push("condition");
    if ("windy" in value && typeof value.windy !== "boolean") out.push("windy");
    return out;
  }

  test("response_format: JSON content valid for the schema, with and without tools", async (t) => {
    const r = await browser.page.evaluate(async (schema) => {
      const { Model, openaiFetch } = await import("/pkg/index.js");
      const { default: OpenAI } = await import("/node_modules/openai/index.mjs");
      const model = await Model.load({ bundle: "/models/wisp-mini/manifest.json" }, { backend: "cpu", cache: false });
      const client = new OpenAI({ apiKey: "local", baseURL: "http://wisp.local/v1", fetch: openaiFetch(model), dangerouslyAllowBrowser: true });
      const response_format = { type: "json_schema", json_schema: { name: "weather", schema, strict: true } };
      const prompts = [
        "What's the weather in Paris?",
        "Describe the weather in Tokyo as JSON.",
        "Is it windy in Oslo?",
        "Weather report for Lima, please.",
        "hello",
        "How cold is it in Berlin?",
        "Give me Sydney's weather.",
        "Rain in London?",
      ];
      // Sampled, with a seed per message (the package's default is greedy): the constraint must hold for
      // whatever the model draws, and the tool set must leave room for answers as well as calls.
      const out = { answers: [], streamed: [], mixed: [] };
      for (const [i, content] of prompts.entries()) {
        const c = await client.chat.completions.create({ model: "wisp-mini", messages: [{ role: "user", content }], response_format, temperature: 1, seed: i, max_tokens: 120 });
        out.answers.push({ content: c.choices[0].message.content, finish: c.choices[0].finish_reason });
      }
      for (const [i, content] of prompts.slice(0, 3).entries()) {
        const stream = await client.chat.completions.create({ model: "wisp-mini", messages: [{ role: "user", content }], response_format, temperature: 1, seed: i, max_tokens: 120, stream: true });
        let text = "";
        let finish;
        for await (const chunk of stream) {
          text += chunk.choices[0].delta.content ?? "";
          finish = chunk.choices[0].finish_reason ?? finish;
        }
        out.streamed.push({ content: text, finish });
      }
      // With tools: each message is calls or the JSON answer.
      const tools = [{ type: "function", function: { name: "get_weather", description: "Get the current weather for a city.", parameters: { type: "object", properties: { city: { type: "string", maxLength: 24 } }, required: ["city"] } } }];
      const mixed = ["hello", "List a few numbers.", "Make a note: dentist at 9:15.", "What's the weather in Paris?"];
      for (const [i, content] of [...mixed, ...mixed, ...mixed].entries()) {
        const messages = [{ role: "user", content }];
        const c = await client.chat.completions.create({ model: "wisp-mini", messages, tools, response_format, temperature: 1, seed: i, max_tokens: 120 });
        out.mixed.push(c.choices[0]);
        // After the tool's result, the answer.
        const call = c.choices[0].message.tool_calls?.[0];
        if (!call) continue;
        messages.push(c.choices[0].message, { role: "tool", tool_call_id: call.id, content: JSON.stringify({ temperature_c: 18, condition: "sunny" }) });
        const next = await client.chat.completions.create({ model: "wisp-mini", messages, tools, response_format, temperature: 0, max_tokens: 120 });
        out.mixed.push(next.choices[0]);
      }
      const object = await client.chat.completions.create({ model: "wisp-mini", messages: [{ role: "user", content: "Say hi in JSON." }], response_format: { type: "json_object" }, temperature: 0, max_tokens: 120 });
      out.object = object.choices[0];
      for (const [name, bad] of [
        ["unsupported", { type: "json_schema", json_schema: { name: "x", schema: { type: "array", uniqueItems: true } } }],
        ["misplaced", { type: "json_schema", schema }],
      ]) {
        try {
          await client.chat.completions.create({ model: "wisp-mini", messages: [{ role: "user", content: "hi" }], response_format: bad });
          out[name] = "resolved";
        } catch (e) {
          out[name] = { status: e.status, code: e.code, message: e.message };
        }
      }
      // The same through Model.generate, and a bad schema there.
      const g = await model.generate({ messages: [{ role: "user", content: "Weather in Rome?" }] }, { responseFormat: response_format, maxTokens: 120 });
      out.generated = { text: g.text, finish: g.finishReason };
      try {
        await model.generate("x", { responseFormat: { type: "json_schema", json_schema: { schema: { type: 5 } } } });
        out.badGenerate = "resolved";
      } catch (e) {
        out.badGenerate = { code: e.code, message: e.message, name: e.name };
      }
      out.after = (await model.generate("Hello", { maxTokens: 4 })).text;
      model.close();
      return out;
    }, weather);

    const all = [...r.answers, ...r.streamed, { content: r.generated.text, finish: r.generated.finish === "eos_token" ? "stop" : r.generated.finish }];
    for (const a of all) {
      assert.equal(a.finish, "stop", JSON.stringify(a));
      assert.deepEqual(problems(JSON.parse(a.content)), [], a.content);
    }
    let calls = 0;
    let answers = 0;
    for (const choice of r.mixed) {
      if (choice.message.tool_calls?.length) {
        assert.equal(choice.finish_reason, "tool_calls");
        for (const call of choice.message.tool_calls) assert.equal(typeof JSON.parse(call.function.arguments).city, "string");
        calls++;
      } else {
        assert.equal(choice.finish_reason, "stop", JSON.stringify(choice));
        assert.deepEqual(problems(JSON.parse(choice.message.content)), [], choice.message.content);
        answers++;
      }
    }
    t.diagnostic(`${all.length} JSON answers, all valid; with tools: ${calls} calls and ${answers} valid answers in ${r.mixed.length} messages; e.g. ${r.answers[0].content}`);
    // How many are answers is the model's choice (wisp-mini calls get_weather for nearly any message with
    // it listed); that the grammar leaves the answer open beside calls is tests/grammar.rs's
    // answers_or_calls_with_tools.
    // `json_object` bounds no string, so a small model may write one until max_tokens (as tests/grammar.rs
    // says natively); what it writes is an object so far, and an object when it ends.
    assert.ok(r.object.message.content.startsWith("{"), JSON.stringify(r.object));
    if (r.object.finish_reason === "stop") {
      const object = JSON.parse(r.object.message.content);
      assert.ok(object && typeof object === "object" && !Array.isArray(object), r.object.message.content);
    } else {
      assert.equal(r.object.finish_reason, "length", JSON.stringify(r.object));
    }

    assert.equal(r.unsupported.status, 400);
    assert.equal(r.unsupported.code, "RESPONSE_FORMAT");
    assert.match(r.unsupported.message, /uniqueItems/);
    assert.equal(r.misplaced.status, 400);
    assert.equal(r.misplaced.code, "INVALID_REQUEST");
    assert.equal(r.badGenerate.name, "WispError");
    assert.equal(r.badGenerate.code, "RESPONSE_FORMAT");
    assert.equal(typeof r.after, "string");
  });
  test("worker mode: a tool call round trip, and the SDK's abort ends a request", async () => {
    const r = await browser.page.evaluate(async () => {
      const { WorkerModel, openaiFetch, createChatCompletions } = await import("/pkg/index.js");
      const { default: OpenAI } = await import("/node_modules/openai/index.mjs");
      const model = await WorkerModel.load({ bundle: "/models/wisp-mini/manifest.json" }, { backend: "cpu", cache: false });
      const client = new OpenAI({ apiKey: "local", baseURL: "http://wisp.local/v1", fetch: openaiFetch(model), dangerouslyAllowBrowser: true, maxRetries: 0 });
      const tools = [{ type: "function", function: { name: "get_weather", description: "Get the current weather for a city.", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];
      const messages = [{ role: "user", content: "What's the weather like in Tokyo right now?" }];
      const out = {};
      try {
        const first = await client.chat.completions.create({ model: "wisp-mini", messages, tools, temperature: 0 });
        out.call = first.choices[0].message.tool_calls?.[0];
        // The replay of an assistant turn with its call crosses to the worker too.
        const second = await client.chat.completions.create({
          model: "wisp-mini",
          messages: [...messages, first.choices[0].message, { role: "tool", tool_call_id: out.call.id, content: JSON.stringify({ city: "Tokyo", temperature_c: 22, condition: "cloudy" }) }],
          tools,
          temperature: 0,
        });
        out.answer = second.choices[0].message.content;
        const controller = new AbortController();
        const stream = await createChatCompletions(model).create({ messages: [{ role: "user", content: "Tell me a long story about the sea." }], stream: true, max_tokens: 400 }, { signal: controller.signal });
        out.chunks = 0;
        try {
          for await (const c of stream) {
            out.chunks++;
            if (c.choices[0].delta.content) controller.abort(new DOMException("stopped", "AbortError"));
          }
          out.aborted = "ended";
        } catch (e) {
          out.aborted = e.name;
        }
      } finally {
        model.close();
      }
      return out;
    });
    assert.equal(r.call.function.name, "get_weather");
    assert.deepEqual(JSON.parse(r.call.function.arguments), { city: "Tokyo" });
    assert.ok(r.answer.includes("22"), r.answer);
    assert.equal(r.aborted, "AbortError");
    assert.ok(r.chunks < 10, `${r.chunks} chunks`);
  });
});
