// One stateless chat completion over a loaded model, shared by the OpenAI surface (openai.js) and the AI
// SDK provider (ai-sdk.js): the conversation is replayed into a fresh core agent (the model's KV cache keeps
// the common prefix, so a follow-up only runs the new tokens) and one turn runs, its tool calls and JSON
// answers constrained by the core's grammar.
import { toWispError } from "./errors.js";
import { breathe } from "./event-loop.js";
import { queueOf } from "./queue.js";
import { fitContext } from "./agent.js";
import { prefixCacheFor } from "./prefix-cache.js";

async function call(fn) {
  try {
    return await fn();
  } catch (e) {
    throw toWispError(e);
  }
}

/**
 * Steps a started turn (an agent's model message, or one completion) to its end, letting the event loop
 * breathe between tokens: yields the core's events (`text`, `tool_call_started`, `tool_call`,
 * `invalid_call`) and returns the finish reason. An abort of `signal` ends it between tokens, rejecting
 * with the signal's reason. The agent's loop (agent.js) and `complete` share it.
 */
export async function* stepTurn(turn, signal) {
  for (;;) {
    await breathe();
    if (signal?.aborted) throw signal.reason ?? new DOMException("the call was aborted", "AbortError");
    const s = await call(() => turn.step());
    yield* s.events;
    if (s.finish) return s.finish;
  }
}

// The core's finish reasons, as OpenAI names them.
const FINISH = { stop: "stop", eos_token: "stop", length: "length" };

/**
 * Runs one request on `model` (a `Model` or a `WorkerModel`). `parsed`: `{ system, specs, replay,
 * toolChoice, request, signal, contextPolicy }`, where `replay` holds `{ role: "user", content }`, `{ role: "assistant",
 * content, calls: [{ id, name, arguments }] }` and `{ role: "tool", id, content }`. Yields `{ text }` deltas
 * and `{ call, index }` tool calls, then returns `{ finish, rawFinish, calls, usage, trimmed }` (`finish`:
 * OpenAI's "stop" | "length" | "tool_calls"; `usage` also has `cached_tokens`; `trimmed`: what the
 * context policy cut from the history, as agent.js's fitContext reports it, or null). An abort of `signal` ends it in the
 * queue or between tokens, rejecting with the signal's reason.
 */
export async function* complete(model, parsed) {
  const { signal } = parsed;
  let release = await queueOf(model).acquire({ signal });
  // A WorkerModel's core agent lives in its worker; a crashed Model's objects must not be freed.
  const alive = () => model.alive !== false;
  let coreAgent;
  try {
    const options = { system: parsed.system, toolCallFormat: model.manifest?.tool_call_format };
    coreAgent = await call(() => (typeof model.agentCore === "function" ? model.agentCore(options) : model.coreAgent(options)));
    // "none": the model is not shown the tools at all.
    if (parsed.toolChoice !== "none") for (const spec of parsed.specs) await call(() => coreAgent.addTool(spec));
    const names = new Map();
    for (const m of parsed.replay) {
      if (m.role === "user") await call(() => coreAgent.pushUser(m.content));
      else if (m.role === "assistant") {
        for (const c of m.calls) names.set(c.id, c.name);
        await call(() => coreAgent.pushAssistant(m.content, m.calls));
      } else await call(() => coreAgent.pushToolResult(m.id, names.get(m.id) ?? "", m.content));
    }
    // A history longer than the context loses its oldest exchanges as an agent's does, with the model's
    // queue free: a page's policy may use the model (to summarize).
    release();
    release = undefined;
    const trimmed = await fitContext(coreAgent, parsed.contextPolicy, parsed.request.maxTokens);
    release = await queueOf(model).acquire({ signal });
    // The system + tools prefix kept by an earlier page load, as an agent's first run restores it.
    const prefix = prefixCacheFor(model);
    const prefixKey = await prefix?.restore(coreAgent);
    const turn = await call(() => coreAgent.startTurn(parsed.request, parsed.toolChoice));
    try {
      const calls = [];
      const steps = stepTurn(turn, signal);
      let next = await steps.next();
      for (; !next.done; next = await steps.next()) {
        const e = next.value;
        if (e.type === "text") yield { text: e.text };
        else if (e.type === "tool_call") {
          const c = { id: e.id, name: e.name, arguments: e.arguments };
          calls.push(c);
          yield { call: c, index: calls.length - 1 };
        }
      }
      const finish = next.value;
      if (prefixKey) await prefix.save(coreAgent, prefixKey);
      const u = turn.usage;
      const usage = {
        prompt_tokens: u.promptTokens,
        completion_tokens: u.completionTokens,
        total_tokens: u.promptTokens + u.completionTokens,
        cached_tokens: u.cachedTokens,
      };
      return { finish: calls.length ? "tool_calls" : (FINISH[finish] ?? "stop"), rawFinish: finish, calls, usage, trimmed };
    } finally {
      if (alive()) turn.free();
    }
  } finally {
    if (alive()) coreAgent?.free();
    release?.();
  }
}
