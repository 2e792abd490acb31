// A Vercel AI SDK language model (specification v4, the `ai` package's major 7) over a loaded Model or
// WorkerModel: `generateText`, `streamText`, `generateObject` and `Output.object` run on the device. It only
// implements the specification object, so it imports nothing from `ai`. Each call replays the prompt into
// a fresh core agent (complete.js); the AI SDK runs the tools and the steps. Tool calls and JSON answers
// are constrained by the core's grammar: every call is valid JSON for its tool's schema.
import { WispError } from "./errors.js";
import { checkInput, generationRequest } from "./requests.js";
import { complete } from "./complete.js";

function invalid(message) {
  return new WispError("INVALID_REQUEST", message);
}

function textParts(content, where, warnings) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) throw invalid(`${where}: content must be an array of parts`);
  let text = "";
  content.forEach((part, i) => {
    if (part?.type === "text" && typeof part.text === "string") text += part.text;
    // The model has no reasoning channel: earlier reasoning is left out of the replay.
    else if (part?.type === "reasoning" || part?.type === "reasoning-file") warnings.push({ type: "other", message: `${where}: a ${part.type} part was left out` });
    else throw invalid(`${where}: content part ${i} is ${JSON.stringify(part?.type)}; only text parts are supported`);
  });
  return text;
}

// A tool result as the model reads it; errors the way the package passes a thrown tool error on.
function resultText(output, where) {
  switch (output?.type) {
    case "text":
      return output.value;
    case "json":
      return JSON.stringify(output.value);
    case "error-text":
      return `error: ${output.value}`;
    case "error-json":
      return `error: ${JSON.stringify(output.value)}`;
    case "execution-denied":
      return `the user declined this call${output.reason ? `: ${output.reason}` : ""}`;
    case "content":
      return output.value.map((p, i) => {
        if (p?.type !== "text") throw invalid(`${where}: output part ${i} is ${JSON.stringify(p?.type)}; only text parts are supported`);
        return p.text;
      }).join("");
    default:
      throw invalid(`${where}: unknown tool output type ${JSON.stringify(output?.type)}`);
  }
}

function replayOf(prompt, warnings) {
  if (!Array.isArray(prompt) || prompt.length === 0) throw invalid("prompt must be a non-empty array of messages");
  const system = [];
  const replay = [];
  prompt.forEach((m, i) => {
    const where = `prompt[${i}]`;
    if (m?.role === "system") {
      if (replay.length) throw invalid(`${where}: a system message is supported only before the conversation`);
      if (typeof m.content !== "string") throw invalid(`${where}: a system message's content must be a string`);
      system.push(m.content);
    } else if (m?.role === "user") {
      const text = textParts(m.content, where, warnings);
      if (!text.trim()) throw invalid(`${where}: the user message is empty`);
      replay.push({ role: "user", content: text });
    } else if (m?.role === "assistant") {
      if (!Array.isArray(m.content)) throw invalid(`${where}: content must be an array of parts`);
      const calls = [];
      const text = textParts(
        m.content.filter((p) => {
          if (p?.type !== "tool-call") return true;
          if (typeof p.toolCallId !== "string" || typeof p.toolName !== "string") throw invalid(`${where}: a tool-call part needs toolCallId and toolName`);
          calls.push({ id: p.toolCallId, name: p.toolName, arguments: typeof p.input === "string" ? p.input : JSON.stringify(p.input ?? {}) });
          return false;
        }),
        where,
        warnings,
      );
      replay.push({ role: "assistant", content: text, calls });
    } else if (m?.role === "tool") {
      if (!Array.isArray(m.content)) throw invalid(`${where}: content must be an array of parts`);
      m.content.forEach((p, k) => {
        // The AI SDK settles approvals itself; what the model reads is the result (or the denial) that follows.
        if (p?.type === "tool-approval-response") return;
        if (p?.type !== "tool-result" || typeof p.toolCallId !== "string") throw invalid(`${where}.content[${k}] must be a tool-result part`);
        replay.push({ role: "tool", id: p.toolCallId, content: resultText(p.output, `${where}.content[${k}]`) });
      });
    } else throw invalid(`${where}: unknown role ${JSON.stringify(m?.role)}`);
  });
  if (!replay.length) throw invalid("prompt has no user message");
  return { system: system.length ? system.join("\n\n") : undefined, replay };
}

function toolsOf(tools = [], warnings) {
  if (!Array.isArray(tools)) throw invalid("tools must be an array");
  const specs = [];
  tools.forEach((t, i) => {
    if (t?.type === "provider") warnings.push({ type: "unsupported", feature: `provider tool ${t.id}`, details: "only function tools run on the device" });
    else if (t?.type === "function" && typeof t.name === "string") {
      checkInput(t.inputSchema, `tools[${i}].inputSchema`, "INVALID_TOOL");
      specs.push({ name: t.name, description: t.description ?? "", parameters: t.inputSchema ?? { type: "object", properties: {} } });
    } else throw invalid(`tools[${i}] must be a function tool { type: "function", name, inputSchema }`);
  });
  return specs;
}

function toolChoiceOf(choice, specs) {
  if (choice === undefined) return "auto";
  if (["auto", "none", "required"].includes(choice?.type)) return choice.type;
  if (choice?.type === "tool" && typeof choice.toolName === "string") {
    if (!specs.some((s) => s.name === choice.toolName)) throw invalid(`toolChoice names '${choice.toolName}', which is not in tools`);
    return choice.toolName;
  }
  throw invalid(`toolChoice must be { type: "auto" | "none" | "required" } or { type: "tool", toolName }`);
}

function responseFormatOf(format) {
  if (format === undefined || format?.type === "text") return undefined;
  if (format?.type !== "json") throw invalid(`responseFormat must be { type: "text" } or { type: "json", schema? }`);
  if (format.schema === undefined) return { type: "json_object" };
  checkInput(format.schema, "responseFormat.schema", "RESPONSE_FORMAT");
  return { type: "json_schema", json_schema: { name: format.name ?? "response", description: format.description, schema: format.schema } };
}

/** The AI SDK's call options, checked and turned into complete()'s request; `warnings` collects what is ignored. */
function parseOptions(options, maxTokens) {
  if (!options || typeof options !== "object") throw invalid("the call options must be an object");
  const warnings = [];
  const { system, replay } = replayOf(options.prompt, warnings);
  const specs = toolsOf(options.tools, warnings);
  // `headers` are left alone without a warning: the AI SDK always sends its user-agent, and there is no HTTP request.
  if (options.reasoning !== undefined && options.reasoning !== "provider-default" && options.reasoning !== "none") {
    warnings.push({ type: "unsupported", feature: "reasoning", details: "the model does not reason before answering" });
  }
  return {
    warnings,
    parsed: {
      system,
      specs,
      replay,
      toolChoice: toolChoiceOf(options.toolChoice, specs),
      signal: options.abortSignal,
      // Greedy unless the call sets a temperature, as everywhere in the package (the AI SDK sets no default).
      request: generationRequest(
        {
          temperature: options.temperature,
          topP: options.topP,
          topK: options.topK,
          presencePenalty: options.presencePenalty,
          frequencyPenalty: options.frequencyPenalty,
          seed: options.seed,
          maxTokens: options.maxOutputTokens,
          stop: options.stopSequences,
          responseFormat: responseFormatOf(options.responseFormat),
        },
        { maxTokens },
      ),
    },
  };
}

const UNIFIED = { stop: "stop", length: "length", tool_calls: "tool-calls" };

function usageOf(u) {
  return {
    inputTokens: { total: u.prompt_tokens, noCache: u.prompt_tokens - u.cached_tokens, cacheRead: u.cached_tokens, cacheWrite: undefined },
    outputTokens: { total: u.completion_tokens, text: u.completion_tokens, reasoning: undefined },
  };
}

const finishOf = (r) => ({ unified: UNIFIED[r.finish] ?? "other", raw: r.rawFinish });
const inputOf = (c) => ({ type: "tool-call", toolCallId: c.id, toolName: c.name, input: c.arguments });

/**
 * An AI SDK language model (LanguageModelV4) over `model` (a loaded `Model` or `WorkerModel`), for `ai`'s
 * `generateText`, `streamText`, `generateObject`: `wisp(model)`. `modelId` defaults to the bundle's name;
 * `maxOutputTokens` is the default length of an answer (256).
 */
export function wisp(model, { modelId = model?.manifest?.name ?? "wisp", maxOutputTokens = 256 } = {}) {
  if (!model || (typeof model.coreAgent !== "function" && typeof model.agentCore !== "function")) {
    throw invalid("wisp(model) takes a loaded Model or WorkerModel");
  }
  return {
    specificationVersion: "v4",
    provider: "wisp",
    modelId,
    // No URL is fetched by the model: file parts are refused.
    supportedUrls: {},

    async doGenerate(options) {
      const { parsed, warnings } = parseOptions(options, maxOutputTokens);
      const timestamp = new Date();
      let text = "";
      const content = [];
      const it = complete(model, parsed);
      let r = await it.next();
      for (; !r.done; r = await it.next()) if (r.value.text) text += r.value.text;
      if (text) content.push({ type: "text", text });
      for (const c of r.value.calls) content.push(inputOf(c));
      return {
        content,
        finishReason: finishOf(r.value),
        usage: usageOf(r.value.usage),
        warnings,
        response: { id: crypto.randomUUID(), timestamp, modelId },
      };
    },

    async doStream(options) {
      const { parsed, warnings } = parseOptions(options, maxOutputTokens);
      const it = complete(model, parsed);
      let started = false;
      // The id of the open text part, if any; a text after a tool call starts a new one.
      let textId = null;
      let parts = 0;
      const id = crypto.randomUUID();
      const stream = new ReadableStream({
        // One part per pull: the model steps only as fast as the reader reads.
        async pull(controller) {
          if (!started) {
            started = true;
            controller.enqueue({ type: "stream-start", warnings });
            controller.enqueue({ type: "response-metadata", id, timestamp: new Date(), modelId });
            return;
          }
          let r;
          try {
            r = await it.next();
          } catch (e) {
            controller.error(e);
            return;
          }
          if (r.done) {
            if (textId) controller.enqueue({ type: "text-end", id: textId });
            controller.enqueue({ type: "finish", finishReason: finishOf(r.value), usage: usageOf(r.value.usage) });
            controller.close();
          } else if (r.value.text) {
            if (!textId) controller.enqueue({ type: "text-start", id: (textId = `text-${parts++}`) });
            controller.enqueue({ type: "text-delta", id: textId, delta: r.value.text });
          } else {
            const c = r.value.call;
            if (textId) controller.enqueue({ type: "text-end", id: textId });
            textId = null;
            // The core emits a call whole, once its grammar closes it: its input arrives as one delta.
            controller.enqueue({ type: "tool-input-start", id: c.id, toolName: c.name });
            controller.enqueue({ type: "tool-input-delta", id: c.id, delta: c.arguments });
            controller.enqueue({ type: "tool-input-end", id: c.id });
            controller.enqueue(inputOf(c));
          }
        },
        // The reader gave up (or the AI SDK aborted): the turn ends and the model's queue moves on.
        async cancel() {
          await it.return();
        },
      });
      return { stream };
    },
  };
}
