// Typed example of the AI SDK provider (wisp-agent/ai-sdk) with the real `ai` types: the provider's object
// is accepted where `ai` takes a model.
import { generateText, stepCountIs, streamText, tool, jsonSchema } from "ai";
import { Model } from "wisp-agent";
import { wisp } from "wisp-agent/ai-sdk";

export async function aiSdk(model: Model): Promise<string> {
  const weather = tool({
    description: "Get the weather.",
    inputSchema: jsonSchema<{ city: string }>({ type: "object", properties: { city: { type: "string" } }, required: ["city"] }),
    execute: async ({ city }) => ({ city, temperature_c: 18 }),
  });
  const result = await generateText({ model: wisp(model, { modelId: "wisp-mini" }), prompt: "Weather in Paris?", tools: { weather }, stopWhen: stepCountIs(3) });
  const stream = streamText({ model: wisp(model), prompt: "Hi" });
  for await (const delta of stream.textStream) delta.toUpperCase();
  return result.text;
}
