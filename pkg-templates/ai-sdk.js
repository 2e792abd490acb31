// `wisp-agent/ai-sdk`: the on-device model as a language model of the Vercel AI SDK (`ai`), for
// `generateText`, `streamText`, `generateObject` and `Output.object`, with tools, `toolChoice`, multi-step
// calls (`stopWhen`), abort and usage. It implements the SDK's LanguageModelV4 specification (`ai` 7) over
// the package's OpenAI-compatible surface (openai.js): each call replays the prompt into the model's chat
// template, and the tool calls it writes are constrained by Wisp's grammar, so each is valid JSON for its
// tool's schema. Nothing of `ai` is imported: a provider is only the object the specification describes.
import { WispError } from "./errors.js";
import { createChatCompletions } from "./openai.js";

const invalid = (message) => new WispError("INVALID_REQUEST", message);

// Settings the model cannot honour: reported as the SDK's warnings, never dropped without a word.
function warningsOf(options) {
  const warnings = [];
  const unsupported = (feature, details) => warnings.push({ type: "unsupported", feature, details });
  if (options.headers && Object.keys(options.headers).length) unsupported("headers", "an on-device model has no HTTP request");
  if (options.reasoning !== undefined && options.reasoning !== "provider-default" && options.reasoning !== "none") {
    unsupported("reasoning", "the model does not reason in a separate channel");
  }
  for (const tool of options.tools ?? []) {
    if (tool.type !== "function") unsupported(`tool ${tool.name ?? tool.id}`, "only function tools run on the page");
  }
  return warnings;
}

// A tool result part's output as the text the model reads in its tool message.
function outputText(output, where) {
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
      return `error: the user declined this call${output.reason ? ` (${output.reason})` : ""}`;
    case "content":
      return output.value
        .map((part, i) => {
          if (part.type !== "text") throw invalid(`${where}: content part ${i} of a tool result is ${JSON.stringify(part.type)}; only text is supported`);
          return part.text;
        })
        .join("");
    default:
      throw invalid(`${where}: a tool result of type ${JSON.stringify(output?.type)} is not supported`);
  }
}

function textParts(content, where, allowed) {
  return content
    .map((part, i) => {
      if (part.type === "text") return part.text;
      if (allowed?.has(part.type)) return "";
      throw invalid(`${where}: a ${JSON.stringify(part.type)} part is not supported by this on-device model (text only)`);
    })
    .join("");
}

/** The SDK's prompt as OpenAI chat messages (openai.js checks them further). */
function messagesOf(prompt) {
  const messages = [];
  prompt.forEach((m, i) => {
    const where = `prompt[${i}]`;
    switch (m.role) {
      case "system":
        messages.push({ role: "system", content: m.content });
        break;
      case "user":
        messages.push({ role: "user", content: textParts(m.content, where) });
        break;
      case "assistant": {
        const calls = m.content
          .filter((p) => p.type === "tool-call")
          .map((p) => ({ id: p.toolCallId, type: "function", function: { name: p.toolName, arguments: typeof p.input === "string" ? p.input : JSON.stringify(p.input) } }));
        // Reasoning is this model's own earlier output, which it never writes; tool calls are above.
        const text = textParts(m.content, where, new Set(["tool-call", "reasoning"]));
        messages.push({ role: "assistant", content: text, ...(calls.length && { tool_calls: calls }) });
        break;
      }
      case "tool":
        for (const part of m.content) {
          // Approval responses are the SDK's bookkeeping for its own approvals: nothing for the model.
          if (part.type === "tool-approval-response") continue;
          messages.push({ role: "tool", tool_call_id: part.toolCallId, content: outputText(part.output, where) });
        }
        break;
      default:
        throw invalid(`${where}: unknown role ${JSON.stringify(m.role)}`);
    }
  });
  return messages;
}

function toolChoiceOf(choice) {
  if (!choice) return undefined;
  if (choice.type === "tool") return { type: "function", function: { name: choice.toolName } };
  return choice.type;
}

function responseFormatOf(format) {
  if (!format || format.type === "text") return undefined;
  if (!format.schema) return { type: "json_object" };
  return { type: "json_schema", json_schema: { name: format.name ?? "response", description: format.description, schema: format.schema, strict: true } };
}

/** The OpenAI request for one call of the SDK. */
function requestOf(options, stream) {
  const tools = (options.tools ?? [])
    .filter((t) => t.type === "function")
    .map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.inputSchema } }));
  const request = {
    messages: messagesOf(options.prompt),
    stream,
    // One sampling default for the package: greedy unless the call asks for a temperature.
    temperature: options.temperature ?? 0,
    max_tokens: options.maxOutputTokens,
    top_p: options.topP,
    top_k: options.topK,
    presence_penalty: options.presencePenalty,
    frequency_penalty: options.frequencyPenalty,
    seed: options.seed,
    stop: options.stopSequences,
    response_format: responseFormatOf(options.responseFormat),
  };
  if (tools.length) {
    request.tools = tools;
    request.tool_choice = toolChoiceOf(options.toolChoice);
  }
  for (const key of Object.keys(request)) if (request[key] === undefined) delete request[key];
  return request;
}

const FINISH = { stop: "stop", length: "length", tool_calls: "tool-calls" };
const finishOf = (raw) => ({ unified: FINISH[raw] ?? "other", raw });

function usageOf(u) {
  return {
    inputTokens: { total: u.prompt_tokens, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: u.completion_tokens, text: u.completion_tokens, reasoning: undefined },
  };
}

/**
 * A LanguageModelV4 over `model` (a loaded `Model` or `WorkerModel`): `generateText({ model: wisp(model),
 * ... })`. `options.modelId` names it in the SDK's results (default "wisp").
 */
export function wisp(model, { modelId = "wisp" } = {}) {
  if (!model || (typeof model.coreAgent !== "function" && typeof model.agentCore !== "function")) {
    throw invalid("wisp(model) takes a loaded Model or WorkerModel");
  }
  const completions = createChatCompletions(model, { name: modelId });
  return {
    specificationVersion: "v4",
    provider: "wisp",
    modelId,
    supportedUrls: {},

    async doGenerate(options) {
      const warnings = warningsOf(options);
      const result = await completions.create(requestOf(options, false), { signal: options.abortSignal });
      const { message, finish_reason } = result.choices[0];
      const content = [];
      if (message.content) content.push({ type: "text", text: message.content });
      for (const c of message.tool_calls ?? []) content.push({ type: "tool-call", toolCallId: c.id, toolName: c.function.name, input: c.function.arguments });
      return { content, finishReason: finishOf(finish_reason), usage: usageOf(result.usage), warnings, response: { id: result.id, modelId } };
    },

    async doStream(options) {
      const warnings = warningsOf(options);
      const chunks = await completions.create(requestOf(options, true), { signal: options.abortSignal });
      const iterator = chunks[Symbol.asyncIterator]();
      let textOpen = false;
      let started = false;
      const stream = new ReadableStream({
        async pull(controller) {
          if (!started) {
            started = true;
            controller.enqueue({ type: "stream-start", warnings });
          }
          let next;
          try {
            next = await iterator.next();
          } catch (e) {
            controller.error(e);
            return;
          }
          if (next.done) {
            controller.close();
            return;
          }
          const chunk = next.value;
          const { delta, finish_reason } = chunk.choices[0];
          if (delta.content) {
            if (!textOpen) controller.enqueue({ type: "text-start", id: "0" });
            textOpen = true;
            controller.enqueue({ type: "text-delta", id: "0", delta: delta.content });
          }
          for (const c of delta.tool_calls ?? []) {
            // The grammar hands out whole, valid calls: the input arrives in one piece.
            controller.enqueue({ type: "tool-input-start", id: c.id, toolName: c.function.name });
            controller.enqueue({ type: "tool-input-delta", id: c.id, delta: c.function.arguments });
            controller.enqueue({ type: "tool-input-end", id: c.id });
            controller.enqueue({ type: "tool-call", toolCallId: c.id, toolName: c.function.name, input: c.function.arguments });
          }
          if (finish_reason) {
            if (textOpen) controller.enqueue({ type: "text-end", id: "0" });
            controller.enqueue({ type: "finish", finishReason: finishOf(finish_reason), usage: usageOf(chunk.usage) });
          }
        },
        async cancel() {
          await iterator.return?.();
        },
      });
      return { stream };
    },
  };
}
