// Typed examples of worker mode (tests/browser/types.test.mjs): the same API, with promises where the
// conversation lives in the worker.
import { createAgent, WorkerModel, type ChatMessage, type WorkerAgent } from "wisp-agent";
import "wisp-agent/threads";

export async function worker(): Promise<void> {
  const model = await WorkerModel.load({ bundle: "/models/wisp-mini/manifest.json" }, { backend: "cpu", threads: 2 });
  const length: number = await model.length();
  const generated = await model.generate("Hi", { maxTokens: 4, wait: false });
  const agent: WorkerAgent = await createAgent({ model });
  const owned: WorkerAgent = await createAgent({ model: { bundle: "/models/wisp-mini/manifest.json" }, worker: true });
  agent.tool({ name: "ping", description: "Answers pong.", parameters: { type: "object", properties: {} } }, () => "pong");
  const removed: boolean = await agent.removeTool("ping");
  const messages: ChatMessage[] = await agent.messages;
  await agent.reset();
  const run = await agent.run("Ping.", { toolChoice: "ping" });
  agent.close();
  owned.close();
  model.close();
  void [length, generated.usage.forcedTokens, removed, messages, run.toolCalls];
}
