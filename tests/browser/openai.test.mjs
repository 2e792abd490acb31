// The OpenAI-compatible surface, through the official `openai` SDK (from node_modules) pointed at the
// in-page model with `openaiFetch`: a tool call, the round trip with its result, streaming (text and
// `delta.tool_calls`), and OpenAI-shaped errors. The bundled model on the CPU backend.
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
});
