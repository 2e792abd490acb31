// Typed examples of the page-mode API, compiled with `tsc --strict` by tests/browser/types.test.mjs: each
// line states what the runtime returns (the browser suites check the values).
import { createAgent, init, Model, WispError, clearModelCache, parseManifest, type AgentEvent, type ChatMessage } from "wisp-agent";
import { wispMini } from "wisp-agent/models/wisp-mini";
import { wispAgent, WISP_AGENT_BASE } from "wisp-agent/models/wisp-agent";

export async function page(): Promise<void> {
  await init({ wasmUrl: "/pkg/wisp_core_bg.wasm", relaxedSimd: false });
  const model = await Model.load({ bundle: "/models/wisp-mini/manifest.json" }, { backend: "cpu", onProgress: (e) => e.phase });
  const alive: boolean = model.alive;
  const ids: Uint32Array = model.encode("Hello");
  const text: string = model.decode(ids);
  const prompt: string = model.renderChat([{ role: "user", content: "Hi" }], { tools: [] });
  const result = await model.generate(prompt, { maxTokens: 8, wait: false, onText: (delta: string) => delta.length });
  const counts: number[] = [result.usage.forcedTokens, result.usage.cachedTokens, result.tokens.length];
  for await (const delta of model.stream("Hi")) delta.text.toUpperCase();
  const logits: Float32Array = await model.forward([1, 2]);

  const agent = await createAgent({ model, system: "Be brief.", maxResultTokens: 200 });
  const defaultAgent = await createAgent();
  defaultAgent.close();
  const mini = await Model.load(wispMini, { backend: "cpu" });
  mini.close();
  const base: string = WISP_AGENT_BASE.sha256;
  const helper = await createAgent({ model: wispAgent({ base: "/models/SmolLM2-135M-Instruct.Q4_1.gguf" }), load: { backend: "cpu" } });
  helper.close();
  void base;
  agent.tool({ name: "get_time", description: "The time in a city.", parameters: { type: "object", properties: { city: { type: "string" } } }, timeoutMs: 5000 }, ({ city }) => `noon in ${city}`);
  agent.tool({ name: "clear", description: "Clear all.", needsApproval: (args: { all?: boolean }) => args.all === true }, () => null);
  agent.tool({ name: "read", description: "Read.", inputSchema: { type: "object" }, execute: () => "text", annotations: { readOnlyHint: true } });
  const stopFollowing: () => void = agent.useModelContext({ registerTool: () => undefined });
  stopFollowing();
  await agent.run("Clear it", { approve: async (call) => call.name === "clear" && Object.keys(call.arguments).length > 0 });
  const removed: boolean = agent.removeTool("get_time");
  const run = await agent.run("What time is it in Oslo?", { toolChoice: "auto", maxSteps: 3, wait: true });
  const forced: number = run.usage.forcedTokens;
  const first: ChatMessage = agent.messages[0];
  const content: string | null = first.content;
  const callId: string | undefined = agent.messages.at(-1)?.tool_calls?.[0]?.id ?? agent.messages.at(-1)?.tool_call_id;
  const events: AgentEvent[] = [];
  const stream = agent.stream("Hi");
  for await (const event of stream) events.push(event);
  const final: string = (await stream.result).text;
  const usage = agent.contextUsage();
  const free: number = usage.capacity - usage.systemAndTools - usage.history;
  const keepRecent = await createAgent({
    model,
    contextPolicy: async (messages, info) => (info.fits ? messages : [messages[0], { role: "assistant", content: "Earlier: small talk." }, ...messages.slice(-1)]),
  });
  for await (const event of keepRecent.stream("Hi")) {
    if (event.type === "context_trimmed") console.log(event.messages, event.tokens, event.policy, free);
    if (event.type === "step_end") console.log(event.usage.promptTokens - event.usage.cachedTokens);
  }
  await createAgent({ model, contextPolicy: "error" });
  agent.reset();
  agent.close();
  model.close();

  try {
    await parseManifest("{}");
  } catch (e) {
    if (e instanceof WispError && (e.code === "INVALID_MANIFEST" || e.code === "WASM_CRASHED")) e.message.trim();
  }
  await clearModelCache();
  void [alive, text, counts, logits, removed, content, callId, final];
}
