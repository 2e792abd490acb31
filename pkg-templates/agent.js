// The agent loop on the page: the model (in Rust) writes a message; valid tool calls (parsed and checked
// against the tool's JSON Schema in Rust) run here as plain JavaScript functions, concurrently and with a
// timeout; their results go back as tool messages, and the model continues until it answers, `maxSteps`
// runs out, or the signal aborts. A tool that throws, hangs or returns something unserializable becomes an
// error message for the model and an event for the page; the run goes on.
// In worker mode the core (conversation, parser, model) is a RemoteAgent in the worker whose methods all
// return promises; this loop awaits every core call, so the same code serves both.
import { WispError } from "./errors.js";

const DEFAULT_TIMEOUT_MS = 10_000;

function abortError(signal) {
  return signal?.reason ?? new DOMException("the run was aborted", "AbortError");
}

// A tool result as JSON-compatible data, or an error saying why it is not.
function toData(value) {
  if (value === undefined) return null;
  if (typeof value === "string") return value;
  try {
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError(`a ${typeof value} is not JSON`);
    return JSON.parse(text);
  } catch (e) {
    throw new WispError("TOOL_RESULT_NOT_JSON", `the tool returned something that is not JSON: ${e.message}`);
  }
}

export class Agent {
  #core;
  #tools = new Map();
  #options;
  #running = false;
  #release;
  // Worker mode: tool registrations still on their way to the worker; a failed one rejects the next run.
  #pending = [];

  constructor(coreAgent, options, release) {
    this.#core = coreAgent;
    this.#options = options;
    this.#release = release;
  }

  /** Frees the agent, and the model too when `createAgent` loaded it. */
  close() {
    this.#core.free();
    this.#release?.();
  }

  /**
   * Registers a tool: `spec` is `{ name, description, parameters /* JSON Schema *\/, timeoutMs }`, `fn` is
   * `async (args, { signal, id }) => result`. Returns the agent, for chaining.
   */
  tool(spec, fn) {
    if (typeof fn !== "function") throw new WispError("INVALID_TOOL", `tool '${spec?.name}' needs a function`);
    const added = wrap(() => this.#core.addTool({ parameters: { type: "object", properties: {} }, ...spec }));
    const entry = { fn, timeoutMs: spec.timeoutMs ?? DEFAULT_TIMEOUT_MS };
    this.#tools.set(spec.name, entry);
    if (added instanceof Promise) {
      const registered = added.catch((e) => {
        if (this.#tools.get(spec.name) === entry) this.#tools.delete(spec.name);
        throw e?.code && !(e instanceof WispError) ? new WispError(e.code, e.message) : e;
      });
      // The next run reports the failure; until then it must not count as unhandled.
      registered.catch(() => {});
      this.#pending.push(registered);
    }
    return this;
  }

  /** Returns whether the tool was registered (a promise of it in worker mode). */
  removeTool(name) {
    this.#tools.delete(name);
    return this.#core.removeTool(name);
  }

  /** Forgets the conversation (the system prompt and the tools stay); a promise in worker mode. */
  reset() {
    return this.#core.reset();
  }

  /** The conversation so far, OpenAI-shaped. */
  get messages() {
    return this.#core.messages;
  }

  /**
   * Runs one user message to an answer. Resolves to `{ text, finishReason, steps, toolCalls, usage }`.
   * `options`: `signal`, `onEvent(event)`, `maxSteps`, `toolChoice` (`"auto"`, `"none"`, `"required"`, a tool
   * name or `{ type: "function", function: { name } }`), and generation options (`maxTokens`, `temperature`, ...).
   * Every call the model makes names a registered tool and has arguments valid for its schema: once a call
   * begins, decoding is constrained to that (see README, "Constrained tool calls").
   */
  async run(input, options = {}) {
    let result;
    const events = this.#events(input, options, (r) => (result = r));
    for await (const event of events) options.onEvent?.(event);
    return result;
  }

  /** The same run as an async iterator of events; `.result` resolves like `run`. */
  stream(input, options = {}) {
    let settle;
    const result = new Promise((resolve, reject) => (settle = { resolve, reject }));
    result.catch(() => {});
    const self = this;
    async function* events() {
      let value;
      try {
        for await (const event of self.#events(input, options, (r) => (value = r))) yield event;
        settle.resolve(value);
      } catch (e) {
        settle.reject(e);
        throw e;
      }
    }
    return { [Symbol.asyncIterator]: events, result };
  }

  async *#events(input, options, done) {
    if (this.#running) throw new WispError("BUSY", "this agent is already running; await the current run first");
    this.#running = true;
    try {
      const pending = this.#pending.splice(0);
      await Promise.all(pending);
      yield* this.#loop(input, options, done);
    } finally {
      this.#running = false;
    }
  }

  async *#loop(input, options, done) {
    const { signal } = options;
    const maxSteps = options.maxSteps ?? this.#options.maxSteps ?? 6;
    const request = {
      sampling: { temperature: options.temperature ?? this.#options.temperature ?? 0 },
      maxTokens: options.maxTokens ?? this.#options.maxTokens ?? 256,
      stop: options.stop ?? [],
      draftTokens: options.draftTokens ?? this.#options.draftTokens,
      seed: crypto.getRandomValues(new Uint32Array(1))[0],
    };
    if (options.seed !== undefined) request.sampling.seed = options.seed;
    if (signal?.aborted) throw abortError(signal);
    await wrapAsync(() => this.#core.pushUser(String(input)));
    // "required" and a named tool apply to the first message only (then "auto"), or the model could never
    // answer with the tools' results; "none" holds for the whole run.
    let toolChoice = options.toolChoice ?? this.#options.toolChoice ?? "auto";
    const toolCalls = [];
    const usage = { promptTokens: 0, cachedTokens: 0, completionTokens: 0, forcedTokens: 0 };
    const started = performance.now();
    for (let step = 1; step <= maxSteps; step++) {
      yield { type: "step_start", step };
      const turn = await wrapAsync(() => this.#core.startTurn(request, toolChoice));
      const calls = [];
      let text = "";
      let finish;
      try {
        do {
          if (signal?.aborted) throw abortError(signal);
          const s = await wrapAsync(() => turn.step());
          for (const e of s.events) {
            if (e.type === "text") {
              text += e.text;
              yield { type: "text", text: e.text };
            } else if (e.type === "tool_call") {
              calls.push(e);
              yield { type: "tool_call", id: e.id, name: e.name, arguments: e.arguments };
            } else if (e.type === "invalid_call") {
              yield { type: "tool_error", id: e.id, name: e.name ?? null, error: e.error, invalid: true };
            }
          }
          finish = s.finish;
        } while (!finish);
        const u = turn.usage;
        usage.promptTokens += u.promptTokens;
        usage.cachedTokens += u.cachedTokens;
        usage.completionTokens += u.completionTokens;
        usage.forcedTokens += u.forcedTokens;
      } finally {
        turn.free();
      }
      yield { type: "step_end", step, finishReason: finish };
      if (calls.length === 0) {
        const result = { text: text.trim(), finishReason: finish, steps: step, toolCalls, usage: { ...usage, totalMs: performance.now() - started } };
        yield { type: "final", ...result };
        done(result);
        return;
      }
      if (toolChoice !== "none") toolChoice = "auto";
      const outcomes = await Promise.all(calls.map((call) => this.#runTool(call, signal)));
      for (const outcome of outcomes) {
        toolCalls.push(outcome);
        await wrapAsync(() => this.#core.pushToolResult(outcome.id, outcome.name, outcome.error ? `error: ${outcome.error}` : outcome.result));
        yield outcome.error
          ? { type: "tool_error", id: outcome.id, name: outcome.name, error: outcome.error, ms: outcome.ms }
          : { type: "tool_result", id: outcome.id, name: outcome.name, result: outcome.result, ms: outcome.ms };
      }
      if (signal?.aborted) throw abortError(signal);
    }
    const result = { text: "", finishReason: "max_steps", steps: maxSteps, toolCalls, usage: { ...usage, totalMs: performance.now() - started } };
    yield { type: "final", ...result };
    done(result);
  }

  async #runTool(call, signal) {
    const started = performance.now();
    const outcome = { id: call.id, name: call.name, arguments: call.arguments };
    const tool = this.#tools.get(call.name);
    if (!tool) return { ...outcome, error: `the tool '${call.name}' was removed`, ms: 0 };
    const controller = new AbortController();
    const onAbort = () => controller.abort(abortError(signal));
    signal?.addEventListener("abort", onAbort, { once: true });
    let timer;
    try {
      const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => {
          controller.abort(new DOMException("timed out", "TimeoutError"));
          reject(new Error(`timed out after ${tool.timeoutMs} ms`));
        }, tool.timeoutMs);
      });
      const aborted = new Promise((_, reject) => controller.signal.addEventListener("abort", () => reject(controller.signal.reason), { once: true }));
      // The tool gets its own copy of the arguments, so what it changes cannot leak back.
      const run = Promise.resolve().then(() => tool.fn(structuredClone(call.arguments), { signal: controller.signal, id: call.id }));
      const value = await Promise.race([run, timeout, aborted]);
      return { ...outcome, result: toData(value), ms: performance.now() - started };
    } catch (e) {
      if (signal?.aborted) throw abortError(signal);
      return { ...outcome, error: e?.message ?? String(e), ms: performance.now() - started };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
  }
}

function wrap(fn) {
  try {
    return fn();
  } catch (e) {
    throw e?.code ? new WispError(e.code, e.message) : e;
  }
}

async function wrapAsync(fn) {
  try {
    return await fn();
  } catch (e) {
    throw e?.code && !(e instanceof WispError) ? new WispError(e.code, e.message) : e;
  }
}

function splitOptions(model, options) {
  const { system, toolCallFormat, maxResultChars, ...rest } = options;
  return [{ system, toolCallFormat: toolCallFormat ?? model.manifest?.tool_call_format, maxResultChars }, rest];
}

/** An agent over a loaded `Model`: `{ model, system, maxSteps, toolCallFormat, maxResultChars, temperature, maxTokens, toolChoice }`. */
export function createAgentFor(model, options = {}, release) {
  const [coreOptions, rest] = splitOptions(model, options);
  return new Agent(wrap(() => model.coreAgent(coreOptions)), rest, release);
}

/** The same over a `WorkerModel`: the conversation lives in its worker, the loop and the tools on the page. */
export async function createWorkerAgentFor(model, options = {}, release) {
  const [coreOptions, rest] = splitOptions(model, options);
  return new Agent(await model.agentCore(coreOptions), rest, release);
}
