// Typed examples of the AI SDK provider (tests/node/types.test.mjs), against the `ai` package's own types.
import { generateText, streamText, stepCountIs, tool, jsonSchema, Output } from "ai";
import { wisp } from "wisp-agent/ai-sdk";
import type { Model, WorkerModel } from "wisp-agent";

export async function aiSdk(model: Model, remote: WorkerModel): Promise<void> {
  const getWeather = tool({
    description: "Get the current weather for a city.",
    inputSchema: jsonSchema<{ city: string }>({ type: "object", properties: { city: { type: "string" } }, required: ["city"] }),
    execute: async ({ city }) => ({ city, temperature_c: 18, condition: "sunny" }),
  });
  const result = await generateText({
    model: wisp(model, { maxOutputTokens: 64 }),
    tools: { get_weather: getWeather },
    toolChoice: "auto",
    stopWhen: stepCountIs(3),
    prompt: "What's the weather in Paris?",
  });
  const text: string = result.text;
  const inputTokens: number | undefined = result.totalUsage.inputTokens;
  const stream = streamText({ model: wisp(remote), prompt: "Hi", abortSignal: AbortSignal.timeout(10_000) });
  for await (const delta of stream.textStream) delta.toUpperCase();
  const { output } = await generateText({
    model: wisp(model),
    output: Output.object({ schema: jsonSchema<{ city: string }>({ type: "object", properties: { city: { type: "string" } }, required: ["city"] }) }),
    prompt: "Paris as JSON",
  });
  const city: string = output.city;
  void [text, inputTokens, city];
}
