// Typed examples of the OpenAI surface (tests/browser/types.test.mjs).
import { createChatCompletions, openaiFetch, type ChatCompletion, type ChatCompletionChunk, type Model, type WorkerModel } from "wisp-agent";

export async function openai(model: Model): Promise<void> {
  const completions = createChatCompletions(model);
  const completion: ChatCompletion = await completions.create({
    messages: [{ role: "user", content: "What time is it in Oslo?" }],
    tools: [{ type: "function", function: { name: "get_time", parameters: { type: "object", properties: {} } } }],
    tool_choice: "auto",
  });
  const calls = completion.choices[0].message.tool_calls ?? [];
  const name: string | undefined = calls[0]?.function.name;
  const total: number = completion.usage.total_tokens;
  const chunks: AsyncIterable<ChatCompletionChunk> = await completions.create({ messages: [{ role: "user", content: "Hi" }], stream: true });
  for await (const chunk of chunks) chunk.choices[0].delta.content?.toUpperCase();
  const json = await completions.create({ messages: [{ role: "user", content: "Hi" }], response_format: { type: "json_object" } }, { signal: AbortSignal.timeout(5_000) });
  const fetcher: typeof fetch = openaiFetch(model);
  void [name, total, json.choices[0].message.content, fetcher];
}

export function openaiInWorker(model: WorkerModel): typeof fetch {
  return openaiFetch(model);
}
