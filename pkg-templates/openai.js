// An OpenAI-compatible surface over a loaded Model: `chat.completions.create()` takes OpenAI's request
// and returns OpenAI's shapes (a completion, or an async iterable of chunks when `stream: true`), and
// `openaiFetch()` answers the official SDK's HTTP calls in the page, so that
//   new OpenAI({ apiKey: "local", baseURL: "http://wisp.local/v1", fetch: openaiFetch(model), dangerouslyAllowBrowser: true })
// talks to the on-device model. The conversation is replayed into the model's chat template for each
// request; the model's KV cache keeps the common prefix, so a follow-up only runs the new tokens.
import { WispError } from "./errors.js";
import { checkInput, generationRequest } from "./requests.js";
import { complete } from "./complete.js";
import { checkContextPolicy } from "./agent.js";

const ROLES = new Set(["system", "developer", "user", "assistant", "tool"]);

function invalid(message) {
  return new WispError("INVALID_REQUEST", message);
}

/** The text of a message's `content`: a string, or text parts. */
function textOf(content, where) {
  if (content === undefined || content === null) return "";
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part, i) => {
        if (part?.type !== "text" || typeof part.text !== "string") {
          throw invalid(`${where}: content part ${i} is ${JSON.stringify(part?.type)}; only text parts are supported`);
        }
        return part.text;
      })
      .join("");
  }
  throw invalid(`${where}: content must be a string or an array of text parts`);
}

function toolChoiceOf(choice, tools) {
  if (choice === undefined) return "auto";
  if (choice === "auto" || choice === "none" || choice === "required") return choice;
  const name = choice?.function?.name;
  if (choice?.type === "function" && typeof name === "string") {
    if (!tools.some((t) => t.name === name)) throw invalid(`tool_choice names '${name}', which is not in tools`);
    return name;
  }
  throw invalid(`tool_choice must be "auto", "none", "required" or { type: "function", function: { name } }`);
}

/** Checks an OpenAI request and turns it into what the core takes. */
function parseRequest(params) {
  if (!params || typeof params !== "object") throw invalid("the request must be an object");
  // The schemas first, with the codes their own mistakes have everywhere else.
  if (Array.isArray(params.tools)) params.tools.forEach((t, i) => checkInput(t, `tools[${i}]`, "INVALID_TOOL"));
  checkInput(params.response_format, "response_format", "RESPONSE_FORMAT");
  checkInput(params, "the request");
  const { messages, tools = [], tool_choice, stream = false, temperature, stop, response_format } = params;
  const maxTokens = params.max_completion_tokens ?? params.max_tokens ?? undefined;
  if (!Array.isArray(messages) || messages.length === 0) throw invalid("messages must be a non-empty array");
  if (!Array.isArray(tools)) throw invalid("tools must be an array");
  if (params.n !== undefined && params.n !== 1) throw invalid("n must be 1: one choice per request");
  if (response_format !== undefined && response_format !== null && typeof response_format !== "object") {
    throw invalid("response_format must be { type: \"text\" | \"json_object\" | \"json_schema\", json_schema? }");
  }
  const specs = tools.map((t, i) => {
    if (t?.type !== "function" || typeof t.function?.name !== "string") {
      throw invalid(`tools[${i}] must be { type: "function", function: { name, description, parameters } }`);
    }
    const { name, description = "", parameters = { type: "object", properties: {} } } = t.function;
    return { name, description, parameters };
  });
  let system;
  const replay = messages.map((m, i) => {
    const where = `messages[${i}]`;
    if (!ROLES.has(m?.role)) throw invalid(`${where}: unknown role ${JSON.stringify(m?.role)}`);
    if (m.role === "system" || m.role === "developer") {
      if (i !== 0) throw invalid(`${where}: a system message is supported only as the first message`);
      system = textOf(m.content, where);
      return null;
    }
    if (m.role === "tool") {
      if (typeof m.tool_call_id !== "string") throw invalid(`${where}: a tool message needs tool_call_id`);
      return { role: "tool", id: m.tool_call_id, content: textOf(m.content, where) };
    }
    if (m.role === "assistant") {
      const calls = (m.tool_calls ?? []).map((c, k) => {
        if (c?.type !== "function" || typeof c.function?.name !== "string") {
          throw invalid(`${where}.tool_calls[${k}] must be { id, type: "function", function: { name, arguments } }`);
        }
        return { id: String(c.id), name: c.function.name, arguments: c.function.arguments ?? "{}" };
      });
      return { role: "assistant", content: textOf(m.content, where), calls };
    }
    const text = textOf(m.content, where);
    if (!text.trim()) throw invalid(`${where}: the user message is empty`);
    return { role: "user", content: text };
  });
  const stops = stop === undefined || stop === null ? [] : Array.isArray(stop) ? stop : [stop];
  const given = (value) => (value === null ? undefined : value);
  return {
    system,
    specs,
    replay: replay.filter(Boolean),
    toolChoice: toolChoiceOf(tool_choice, specs),
    stream: Boolean(stream),
    // The core checks the format and its schema (INVALID_REQUEST, RESPONSE_FORMAT) before anything runs.
    // Greedy unless the request sets a temperature: the package's one default, where OpenAI's is 1.
    // top_k is not OpenAI's, but other local servers take it.
    request: generationRequest({
      temperature: given(temperature),
      topP: given(params.top_p),
      topK: given(params.top_k),
      presencePenalty: given(params.presence_penalty),
      frequencyPenalty: given(params.frequency_penalty),
      seed: given(params.seed),
      maxTokens,
      stop: stops,
      responseFormat: given(response_format),
    }),
  };
}

function toolCallsOf(calls) {
  return calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } }));
}

/**
 * OpenAI's `client.chat.completions` over `model` (a loaded `Model` or `WorkerModel`). `create(params,
 * { signal })` takes the SDK's request options: an abort ends the request between tokens (or in the queue).
 * `contextPolicy`: what a request whose history outgrows the context does, as for `createAgent`; a cut
 * shows as `usage.context_trimmed`.
 */
export function createChatCompletions(model, { name = "wisp", contextPolicy } = {}) {
  checkContextPolicy(contextPolicy);
  const usageOf = ({ usage, trimmed }) => (trimmed ? { ...usage, context_trimmed: trimmed } : usage);
  // Requests take turns in the model's queue (complete()), with every other call on the model.
  return {
    async create(params, { signal } = {}) {
      const parsed = { ...parseRequest(params), signal, contextPolicy };
      const id = `chatcmpl-${crypto.randomUUID()}`;
      const created = Math.floor(Date.now() / 1000);
      if (!parsed.stream) {
        return (async () => {
          let text = "";
          const it = complete(model, parsed);
          let r = await it.next();
          for (; !r.done; r = await it.next()) if (r.value.text) text += r.value.text;
          const { finish, calls } = r.value;
          const usage = usageOf(r.value);
          const message = { role: "assistant", content: calls.length && !text.trim() ? null : text };
          if (calls.length) message.tool_calls = toolCallsOf(calls);
          return { id, object: "chat.completion", created, model: name, choices: [{ index: 0, message, finish_reason: finish, logprobs: null }], usage };
        })();
      }
      const chunk = (delta, finish_reason = null, extra = {}) => ({
        id,
        object: "chat.completion.chunk",
        created,
        model: name,
        choices: [{ index: 0, delta, finish_reason, logprobs: null }],
        ...extra,
      });
      const chunks = [];
      let wake = null;
      let ended = false;
      let failure = null;
      const push = (c) => {
        chunks.push(c);
        wake?.();
      };
      (async () => {
        try {
          push(chunk({ role: "assistant", content: "" }));
          const it = complete(model, parsed);
          let r = await it.next();
          for (; !r.done; r = await it.next()) {
            if (r.value.text) push(chunk({ content: r.value.text }));
            else {
              const { call: c, index } = r.value;
              push(chunk({ tool_calls: [{ index, id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } }] }));
            }
          }
          push(chunk({}, r.value.finish, { usage: usageOf(r.value) }));
        } catch (e) {
          failure = e;
        } finally {
          ended = true;
          wake?.();
        }
      })();
      return {
        async *[Symbol.asyncIterator]() {
          for (;;) {
            if (chunks.length) yield chunks.shift();
            else if (failure) throw failure;
            else if (ended) return;
            else await new Promise((resolve) => (wake = resolve));
          }
        },
      };
    },
  };
}

// Failures caused by the request itself: status 400, as OpenAI answers them.
const CLIENT_ERRORS = new Set([
  "INVALID_REQUEST",
  "RESPONSE_FORMAT",
  "INVALID_TOOL",
  "DUPLICATE_TOOL",
  "UNKNOWN_TOOL",
  "TOOL_GRAMMAR",
  "CONTEXT_OVERFLOW",
]);

/**
 * A `fetch` for the official `openai` SDK: answers `POST …/chat/completions` with the on-device model
 * (JSON, or server-sent events when `stream: true`); errors come back as OpenAI error bodies with status
 * 400 (a bad request: its schema, tools, length) or 500, and every other path is a 404.
 */
export function openaiFetch(model, options) {
  const completions = createChatCompletions(model, options);
  const error = (status, e) =>
    new Response(JSON.stringify({ error: { message: e.message ?? String(e), type: status === 400 ? "invalid_request_error" : "server_error", code: e.code ?? null, param: null } }), {
      status,
      headers: { "content-type": "application/json" },
    });
  return async (input, init = {}) => {
    const request = new Request(input, init);
    if (request.method !== "POST" || !new URL(request.url).pathname.endsWith("/chat/completions")) {
      return error(404, { message: `${request.method} ${new URL(request.url).pathname} is not served here; only POST /chat/completions` });
    }
    let result;
    try {
      result = await completions.create(await request.json(), { signal: request.signal });
    } catch (e) {
      return error(CLIENT_ERRORS.has(e?.code) || e instanceof SyntaxError ? 400 : 500, e);
    }
    if (!(Symbol.asyncIterator in result)) {
      return new Response(JSON.stringify(result), { status: 200, headers: { "content-type": "application/json" } });
    }
    const encoder = new TextEncoder();
    const body = new ReadableStream({
      async start(controller) {
        try {
          for await (const c of result) controller.enqueue(encoder.encode(`data: ${JSON.stringify(c)}\n\n`));
          controller.enqueue(encoder.encode("data: [DONE]\n\n"));
        } catch (e) {
          controller.enqueue(encoder.encode(`data: ${JSON.stringify({ error: { message: e.message, code: e.code ?? null } })}\n\n`));
        }
        controller.close();
      },
    });
    return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
  };
}
