// The agent loop on the page: the model (in Rust) writes a message; valid tool calls (parsed and checked
// against the tool's JSON Schema in Rust) run here as plain JavaScript functions, concurrently and with a
// timeout; their results go back as tool messages, and the model continues until it answers, `maxSteps`
// runs out, or the signal aborts. A tool that throws, hangs or returns something unserializable becomes an
// error message for the model and an event for the page; the run goes on. A run is all or nothing: one that
// fails, is aborted or is left early leaves the conversation as it was before it.
// In worker mode the core (conversation, parser, model) is a RemoteAgent in the worker whose methods all
// return promises; this loop awaits every core call, so the same code serves both.
import { WispError, crashedError, toWispError } from "./errors.js";
import { DEFAULT_MAX_TOKENS, checkCount, checkInput, generationRequest } from "./requests.js";
import { stepTurn } from "./complete.js";
import { streamWithResult } from "./streams.js";
import { queueOf } from "./queue.js";
import { prefixCacheFor } from "./prefix-cache.js";

const DEFAULT_TIMEOUT_MS = 10_000;
// setTimeout's longest delay: a longer one fires at once.
const MAX_TIMEOUT_MS = 2 ** 31 - 1;
// No token is longer than this many characters in the tokenizers Wisp runs, so a result's first
// `maxResultTokens * 16` characters hold all the core can keep: only those cross into wasm (never a 50 MB
// string), and the core cuts them to `maxResultTokens` tokens.
const MAX_CHARS_PER_TOKEN = 16;

function abortError(signal) {
  return signal?.reason ?? new DOMException("the run was aborted", "AbortError");
}

// A tool result as JSON-compatible data, or an error saying why it is not. `text` is its JSON, when it
// had to be serialized.
function toData(value) {
  if (value === undefined) return { data: null };
  if (typeof value === "string") return { data: value };
  try {
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError(`a ${typeof value} is not JSON`);
    const data = JSON.parse(text);
    checkInput(data, "the result", "TOOL_RESULT_NOT_JSON");
    return { data, text };
  } catch (e) {
    if (e instanceof WispError) throw e;
    throw new WispError("TOOL_RESULT_NOT_JSON", `the tool returned something that is not JSON: ${e.message}`);
  }
}

// What of a result crosses into the conversation: the core keeps `maxChars` characters of it anyway, so a
// result far longer (a 50 MB string) is cut here first, and `omitted` tells the core how much went.
// Objects that long go as their JSON text.
function clip({ data, text }, maxChars) {
  const long = typeof data === "string" ? data : text;
  if (long === undefined || long.length <= 2 * maxChars) return { result: data, omitted: 0 };
  // Code points, as the core counts characters; the first `maxChars` of them lie within 2 * maxChars units.
  let total = 0;
  for (let i = 0; i < long.length; i++) {
    const unit = long.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < long.length) {
      const next = long.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    total++;
  }
  const kept = Array.from(long.slice(0, 2 * maxChars)).slice(0, maxChars).join("");
  return { result: kept, omitted: total - maxChars };
}

export class Agent {
  #core;
  #tools = new Map();
  #options;
  #closed = false;
  #release;
  #alive;
  #running = false;
  // The model's queue: each model message of a run waits its turn there, so agents and calls sharing the
  // model interleave between messages, never inside one.
  #model;
  // Worker mode: tool registrations still on their way to the worker; a failed one rejects the next run.
  #pending = [];
  // Where this agent's system + tools prefix is kept across page loads (prefix-cache.js), or null.
  #prefix;

  // `release`: frees what the agent owns (the model createAgent loaded); `alive()`: whether the core's wasm
  // instance is still usable (false after a trap; errors.js); `queue`: the model's queue; `prefix`: its
  // prefix cache.
  constructor(coreAgent, options, { release, alive = () => true, queue, prefix = null }) {
    this.#core = coreAgent;
    this.#options = options;
    this.#release = release;
    this.#alive = alive;
    this.#model = queue;
    this.#prefix = prefix;
  }

  /** Frees the agent, and the model too when `createAgent` loaded it. Later calls reject with SESSION_CLOSED. */
  close() {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#alive()) this.#core.free();
    this.#release?.();
  }

  // The core, unless the agent was closed (a tool may close it in the middle of a run).
  #live() {
    if (this.#closed) throw new WispError("SESSION_CLOSED", "this agent was closed");
    if (!this.#alive()) throw crashedError();
    return this.#core;
  }

  /**
   * Registers a tool: `spec` is `{ name, description, parameters /* JSON Schema *\/, timeoutMs, needsApproval }`,
   * `fn` is `async (args, { signal, id }) => result`. Or one WebMCP-shaped object, `{ name, description,
   * inputSchema, execute, annotations }` (`execute` is `fn`; `annotations.readOnlyHint === false` means
   * `needsApproval: true` unless the tool says otherwise). `needsApproval`: `true`, or `(args) => boolean`
   * (may be async): the call waits for the `approve` option first. Returns the agent, for chaining.
   */
  tool(spec, fn) {
    const { described, entry } = toolEntry(spec, fn);
    const core = this.#live();
    const added = wrap(() => core.addTool(described));
    // In worker mode the core answers later: a refused duplicate must not replace the registered function.
    const previous = this.#tools.get(spec.name);
    this.#tools.set(spec.name, entry);
    if (added instanceof Promise) {
      const registered = added.catch((e) => {
        if (this.#tools.get(spec.name) === entry) {
          if (previous) this.#tools.set(spec.name, previous);
          else this.#tools.delete(spec.name);
        }
        throw toWispError(e);
      });
      // The next run reports the failure; until then it must not count as unhandled.
      registered.catch(() => {});
      this.#pending.push(registered);
    }
    return this;
  }

  /**
   * Registers the tools of a WebMCP model context (by default `document.modelContext`, else
   * `navigator.modelContext`) and follows it: tools it lists now (`getTools()`, where it has one) and every
   * later `registerTool` / `unregisterTool` / `provideContext` / `clearContext` on it reach this agent too.
   * Returns a function that stops following (the tools taken so far stay registered).
   */
  useModelContext(context = globalThis.document?.modelContext ?? globalThis.navigator?.modelContext) {
    if (!context || typeof context.registerTool !== "function") {
      throw new WispError("INVALID_REQUEST", "there is no model context with registerTool (document.modelContext or navigator.modelContext, or pass one)");
    }
    this.#live();
    const names = new Set();
    const take = (tool) => {
      this.tool(tool);
      names.add(tool.name);
    };
    const drop = (name) => {
      if (names.delete(name)) this.removeTool(name);
    };
    const listed = typeof context.getTools === "function" ? context.getTools() : [];
    for (const tool of Array.isArray(listed) ? listed : []) if (typeof tool?.execute === "function") take(tool);
    const original = {};
    const follow = (method, after) => {
      if (typeof context[method] !== "function") return;
      original[method] = context[method];
      context[method] = function (...args) {
        const value = original[method].apply(this, args);
        after(value, ...args);
        return value;
      };
    };
    follow("registerTool", (registration, tool) => {
      take(tool);
      // The draft's registerTool returns `{ unregister }` in some versions.
      if (registration && typeof registration.unregister === "function") {
        const unregister = registration.unregister;
        registration.unregister = function (...args) {
          const value = unregister.apply(this, args);
          drop(tool.name);
          return value;
        };
      }
    });
    follow("unregisterTool", (_, name) => drop(name));
    follow("provideContext", (_, { tools = [] } = {}) => {
      for (const name of [...names]) drop(name);
      for (const tool of tools) take(tool);
    });
    follow("clearContext", () => {
      for (const name of [...names]) drop(name);
    });
    return () => Object.assign(context, original);
  }

  removeTool(name) {
    const core = this.#live();
    this.#tools.delete(name);
    return core.removeTool(name);
  }

  /** Forgets the conversation (the system prompt and the tools stay); a promise in worker mode. */
  reset() {
    return this.#live().reset();
  }

  /** The conversation so far, OpenAI-shaped: what the model sees (after any trim of the history). */
  get messages() {
    return this.#live().messages;
  }

  /**
   * Where the context goes, in tokens of the model's tokenizer: `{ capacity, systemAndTools, history, free,
   * reserve, fits }` for the next message (a promise in worker mode).
   */
  contextUsage() {
    const core = this.#live();
    return wrap(() => core.contextUsage(this.#options.maxTokens ?? DEFAULT_MAX_TOKENS));
  }

  /**
   * Runs one user message to an answer. Resolves to `{ text, finishReason, steps, toolCalls, usage }`.
   * `options`: `signal`, `onEvent(event)`, `maxSteps`, `toolChoice` (`"auto"`, `"none"`, `"required"`, a tool
   * name or `{ type: "function", function: { name } }`), and generation options (`maxTokens`, `temperature`, ...).
   * Every call the model makes names a registered tool and has arguments valid for its schema: once a call
   * begins, decoding is constrained to that (docs/guide.md, "Tool calls").
   */
  async run(input, options = {}) {
    let result;
    const events = this.#events(input, options, (r) => (result = r));
    for await (const event of events) options.onEvent?.(event);
    return result;
  }

  /** The same run as an async iterator of events; `.result` resolves like `run`. */
  stream(input, options = {}) {
    // Left early: the result is there once the final event was seen; before that the run was undone.
    return streamWithResult((done) => this.#events(input, options, done), "the run was left before it finished and was undone");
  }

  // One run at a time: a second `run` while one is in progress rejects with BUSY (it does not queue: a
  // tool that runs its own agent would wait for itself).
  async *#events(input, options, done) {
    if (this.#running) throw new WispError("BUSY", "this agent is already running; await the current run first");
    this.#live();
    this.#running = true;
    // What undoes this run if it fails: the history before it when a step may trim it (a policy may
    // change it and then fail), else its first message count.
    let undo;
    let finished = false;
    try {
      const pending = this.#pending.splice(0);
      await Promise.all(pending);
      if (typeof input !== "string") throw new WispError("INVALID_REQUEST", "run() takes the user's message as a string");
      checkInput(input, "the message");
      checkInput(options.stop, "stop");
      checkApprove(options.approve);
      checkInput(options.responseFormat ?? this.#options.responseFormat, "responseFormat", "RESPONSE_FORMAT");
      const mark = await this.#live().messageCount;
      undo = { mark, history: this.#options.contextPolicy === "error" ? null : await this.#live().messages };
      yield* this.#loop(input, options, (result) => {
        finished = true;
        done(result);
      });
    } finally {
      if (!finished && undo !== undefined) {
        // Undo the run's messages; when the core is gone (closed, worker dead) there is nothing to undo.
        await Promise.resolve()
          .then(() => undoRun(this.#live(), undo))
          .catch(() => {});
      }
      this.#running = false;
    }
  }

  async *#loop(input, options, done) {
    const { signal } = options;
    const maxSteps = options.maxSteps ?? this.#options.maxSteps ?? 6;
    if (!Number.isInteger(maxSteps) || maxSteps < 1) {
      throw new WispError("INVALID_REQUEST", `maxSteps is ${maxSteps}; it must be a whole number, at least 1`);
    }
    // This run's options, then the agent's defaults (createAgent's options).
    const { temperature, maxTokens, draftTokens, responseFormat } = this.#options;
    const request = generationRequest(options, { temperature, maxTokens, draftTokens, responseFormat });
    if (signal?.aborted) throw abortError(signal);
    await wrapAsync(() => this.#live().pushUser(input));
    // "required" and a named tool apply to the first message only (then "auto"), or the model could never
    // answer with the tools' results; "none" holds for the whole run.
    let toolChoice = options.toolChoice ?? this.#options.toolChoice ?? "auto";
    const toolCalls = [];
    const usage = { promptTokens: 0, cachedTokens: 0, completionTokens: 0, forcedTokens: 0 };
    const started = performance.now();
    for (let step = 1; step <= maxSteps; step++) {
      yield { type: "step_start", step };
      // Before the model's queue is taken: a page's policy may use the model (to summarize).
      const trimmed = await fitContext(this.#live(), this.#options.contextPolicy, request.maxTokens);
      if (trimmed) yield { type: "context_trimmed", step, ...trimmed };
      const calls = [];
      let refused = 0;
      let text = "";
      let finish;
      const release = await this.#model.acquire(options);
      // The tools as the turn's grammar and argument checks see them: a call is run only by the same tool.
      const tools = new Map(this.#tools);
      let turn;
      let stepUsage;
      try {
        // A prefix kept by an earlier page load: no prefill for it.
        const prefix = step === 1 ? this.#prefix : null;
        const prefixKey = await prefix?.restore(this.#live());
        turn = await wrapAsync(() => this.#live().startTurn(request, toolChoice));
        const steps = stepTurn(turn, signal);
        let next = await steps.next();
        for (; !next.done; next = await steps.next()) {
          const e = next.value;
          if (e.type === "text") {
            text += e.text;
            yield { type: "text", text: e.text };
          } else if (e.type === "tool_call_started") {
            yield { type: "tool_call_start", step };
          } else if (e.type === "tool_call") {
            // JSON text from the core: JSON.parse keeps a "__proto__" key a plain property.
            const call = { id: e.id, name: e.name, arguments: JSON.parse(e.arguments) };
            calls.push(call);
            yield { type: "tool_call", ...call, arguments: JSON.parse(e.arguments) };
          } else if (e.type === "invalid_call") {
            refused++;
            yield { type: "tool_error", id: e.id, name: e.name ?? null, error: e.error, invalid: true };
          }
        }
        finish = next.value;
        const u = turn.usage;
        stepUsage = { promptTokens: u.promptTokens, cachedTokens: u.cachedTokens, completionTokens: u.completionTokens, forcedTokens: u.forcedTokens };
        usage.promptTokens += u.promptTokens;
        usage.cachedTokens += u.cachedTokens;
        usage.completionTokens += u.completionTokens;
        usage.forcedTokens += u.forcedTokens;
        // The core as it is (save never rejects, even on one a handler closed meanwhile).
        if (prefixKey) await prefix.save(this.#core, prefixKey);
      } finally {
        if (this.#alive()) turn?.free();
        release();
      }
      yield { type: "step_end", step, finishReason: finish, usage: stepUsage };
      // A message whose calls were all refused goes on too: the model reads why (its tool messages) and
      // may try again, within maxSteps.
      if (calls.length === 0 && refused === 0) {
        const result = { text: text.trim(), finishReason: finish, steps: step, toolCalls, usage: { ...usage, totalMs: performance.now() - started } };
        done(result);
        yield { type: "final", ...result };
        return;
      }
      if (toolChoice !== "none") toolChoice = "auto";
      if (signal?.aborted) throw abortError(signal);
      // Approvals one call at a time, in the model's order (each may be a dialog); then the approved run.
      const declined = [];
      for (const call of calls) declined.push(yield* this.#approval(call, tools.get(call.name), options));
      const outcomes = await Promise.all(
        calls.map((call, i) => (declined[i] ? declinedOutcome(call, declined[i]) : this.#runTool(call, tools.get(call.name), signal))),
      );
      for (const { entered, ...outcome } of outcomes) {
        toolCalls.push(outcome);
        await wrapAsync(() => this.#live().pushToolResult(outcome.id, outcome.name, entered.result, entered.omitted));
        yield outcome.error
          ? { type: "tool_error", id: outcome.id, name: outcome.name, error: outcome.error, ms: outcome.ms, ...(outcome.declined && { declined: true }) }
          : { type: "tool_result", id: outcome.id, name: outcome.name, result: outcome.result, ms: outcome.ms };
      }
      if (signal?.aborted) throw abortError(signal);
    }
    const result = { text: "", finishReason: "max_steps", steps: maxSteps, toolCalls, usage: { ...usage, totalMs: performance.now() - started } };
    done(result);
    yield { type: "final", ...result };
  }

  // Whether `call` may run: undefined when it needs no approval or was approved, otherwise why not (for
  // the model). Asks the run's `approve` option after a `tool_approval` event; its failure fails the run.
  async *#approval(call, tool, options) {
    const rule = tool?.needsApproval;
    if (!rule) return undefined;
    const { signal } = options;
    const ask = (fn) => {
      const aborted = new Promise((_, reject) => {
        if (signal?.aborted) reject(abortError(signal));
        signal?.addEventListener("abort", () => reject(abortError(signal)), { once: true });
      });
      return Promise.race([Promise.resolve().then(() => fn(structuredClone(call.arguments))), aborted]).catch((e) => {
        if (signal?.aborted) throw abortError(signal);
        throw new WispError("APPROVAL_FAILED", `the approval of the call of '${call.name}' failed: ${describe(e)}`);
      });
    };
    if (rule !== true && !(await ask(rule))) return undefined;
    yield { type: "tool_approval", id: call.id, name: call.name, arguments: structuredClone(call.arguments) };
    const approve = options.approve ?? this.#options.approve;
    if (!approve) return "the user did not approve this call (no approver)";
    const approved = await ask(() => approve({ id: call.id, name: call.name, arguments: structuredClone(call.arguments) }));
    return approved ? undefined : "the user declined this call";
  }

  // `tool`: the registration the call was checked against.
  async #runTool(call, tool, signal) {
    const started = performance.now();
    const outcome = { id: call.id, name: call.name, arguments: call.arguments };
    const now = this.#tools.get(call.name);
    if (!now || now !== tool) {
      // Replaced while the model wrote the call: the arguments were checked against the old schema.
      const error = now ? `the tool '${call.name}' was replaced while it was being called; call it again` : `the tool '${call.name}' was removed`;
      return { ...outcome, error, entered: { result: `error: ${error}`, omitted: 0 }, ms: 0 };
    }
    const controller = new AbortController();
    const onAbort = () => controller.abort(abortError(signal));
    signal?.addEventListener("abort", onAbort, { once: true });
    let timer;
    try {
      const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => {
          const reason = new DOMException(`timed out after ${tool.timeoutMs} ms`, "TimeoutError");
          reject(reason);
          controller.abort(reason);
        }, tool.timeoutMs);
      });
      const aborted = new Promise((_, reject) => controller.signal.addEventListener("abort", () => reject(controller.signal.reason), { once: true }));
      // The tool gets its own copy of the arguments, so what it changes cannot leak back.
      const run = Promise.resolve().then(() => tool.fn(structuredClone(call.arguments), { signal: controller.signal, id: call.id }));
      const value = await Promise.race([run, timeout, aborted]);
      const data = toData(value);
      return { ...outcome, result: data.data, entered: clip(data, this.#options.precutChars), ms: performance.now() - started };
    } catch (e) {
      if (signal?.aborted) throw abortError(signal);
      const error = describe(e);
      return { ...outcome, error, entered: { result: `error: ${error}`, omitted: 0 }, ms: performance.now() - started };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
  }
}

// --- The context budget: what the model sees when the history outgrows its context. The agent and the
// OpenAI surface (openai.js) both call fitContext before each message.


/** Checks a `contextPolicy` option: `"trim"` (the default), `"error"`, or a function. */
export function checkContextPolicy(policy) {
  if (policy === undefined || policy === "trim" || policy === "error" || typeof policy === "function") return;
  throw new WispError("INVALID_REQUEST", `contextPolicy is ${JSON.stringify(policy)}; it must be "trim", "error" or a function (messages, info) => messages`);
}

function policyError(message) {
  return new WispError("CONTEXT_POLICY", `the contextPolicy callback ${message}`);
}

const sameMessage = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/**
 * Makes the prompt of the next message leave room for an answer of `maxTokens` (the core decides what
 * fits, with the model's tokenizer and template): `"trim"` lets the core shorten old tool results or drop
 * the oldest whole exchanges; a function gets the messages and `contextUsage` and returns those to keep
 * (the system message first and the current exchange last, unchanged), and the core trims what still does
 * not fit; `"error"` leaves the history alone, so the step fails with CONTEXT_OVERFLOW. Resolves to what
 * went (`{ messages, shortened, tokens, policy }`), or null when nothing did.
 */
export async function fitContext(core, policy = "trim", maxTokens) {
  if (policy === "error") return null;
  if (policy === "trim") {
    const trim = await wrapAsync(() => core.fitContext(maxTokens));
    return trim && { ...trim, policy };
  }
  const info = await wrapAsync(() => core.contextUsage(maxTokens));
  if (info.fits) return null;
  const messages = await core.messages;
  const kept = await keptByPage(policy, messages, info);
  const system = messages[0]?.role === "system" ? 1 : 0;
  try {
    await core.setHistory(kept.slice(system));
  } catch (e) {
    throw policyError(`returned messages the conversation cannot hold: ${toWispError(e).message}`);
  }
  const more = await wrapAsync(() => core.fitContext(maxTokens));
  const after = await wrapAsync(() => core.contextUsage(maxTokens));
  return {
    messages: messages.length - kept.length + (more?.messages ?? 0),
    shortened: more?.shortened ?? 0,
    tokens: info.systemAndTools + info.history - (after.systemAndTools + after.history),
    policy: "callback",
  };
}

// The page's choice, checked: an array that starts with the system message (when there is one) and ends
// with the current exchange (the last user message and what follows it), both as they were.
async function keptByPage(policy, messages, info) {
  let kept;
  try {
    kept = await policy(structuredClone(messages), { ...info });
  } catch (e) {
    throw policyError(`threw: ${describe(e)}`);
  }
  if (!Array.isArray(kept)) throw policyError("must return an array of messages");
  if (messages[0]?.role === "system" && !sameMessage(kept[0], messages[0])) throw policyError("must keep the system message first");
  let current = messages.length - 1;
  while (current > 0 && messages[current].role !== "user") current--;
  const tail = messages.slice(current);
  const keptTail = kept.slice(kept.length - tail.length);
  if (kept.length < tail.length || !tail.every((m, i) => sameMessage(m, keptTail[i]))) {
    throw policyError("must keep the current exchange (the last user message and what follows it) at the end, unchanged");
  }
  return kept;
}

// Undoes a run that failed: the history as it was before the run, or (policy "error": nothing was cut)
// back to its first message count.
async function undoRun(core, { mark, history }) {
  if (!history) return core.truncate(mark);
  return core.setHistory(history.slice(history[0]?.role === "system" ? 1 : 0));
}

// What a tool threw, as text for the model: its message, or the value itself (tools may throw anything,
// even an object whose message getter throws).
function describe(e) {
  try {
    return String(e?.message ?? e);
  } catch {
    return "the tool failed (its error cannot be shown)";
  }
}

// A call the user did not approve: never run; the model reads why.
function declinedOutcome(call, why) {
  return { id: call.id, name: call.name, arguments: call.arguments, error: why, declined: true, entered: { result: `error: ${why}`, omitted: 0 }, ms: 0 };
}

const TOOL_FIELDS = new Set(["name", "description", "parameters", "timeoutMs", "needsApproval"]);
const WEBMCP_FIELDS = new Set(["name", "description", "inputSchema", "execute", "annotations", "timeoutMs", "needsApproval"]);

// A tool registration, checked: what the core gets (`described`) and what the loop keeps (`entry`).
function toolEntry(spec, fn) {
  if (spec === null || typeof spec !== "object") throw new WispError("INVALID_TOOL", "a tool is described by { name, description, parameters }");
  const webmcp = fn === undefined && typeof spec.execute === "function";
  if (webmcp) fn = spec.execute.bind(spec);
  if (typeof fn !== "function") throw new WispError("INVALID_TOOL", `tool '${spec.name}' needs a function`);
  for (const key of Object.keys(spec)) {
    if (!(webmcp ? WEBMCP_FIELDS : TOOL_FIELDS).has(key)) {
      throw new WispError("INVALID_TOOL", `tool '${spec.name}' has an unknown field '${key}'${webmcp ? "" : "; a WebMCP-shaped tool has execute"}`);
    }
  }
  checkInput(spec, `tool '${spec.name}'`, "INVALID_TOOL");
  checkCount(spec.timeoutMs, `timeoutMs of tool '${spec.name}'`, { max: MAX_TIMEOUT_MS, code: "INVALID_TOOL" });
  let needsApproval = spec.needsApproval ?? (webmcp && spec.annotations?.readOnlyHint === false);
  if (typeof needsApproval !== "boolean" && typeof needsApproval !== "function") {
    throw new WispError("INVALID_TOOL", `needsApproval of tool '${spec.name}' is ${typeof needsApproval}; use a boolean or a function of the arguments`);
  }
  const parameters = (webmcp ? spec.inputSchema : spec.parameters) ?? { type: "object", properties: {} };
  const described = { name: spec.name, parameters };
  if (spec.description !== undefined) described.description = spec.description;
  return { described, entry: { fn, timeoutMs: spec.timeoutMs ?? DEFAULT_TIMEOUT_MS, needsApproval } };
}

function wrap(fn) {
  try {
    return fn();
  } catch (e) {
    throw toWispError(e);
  }
}

async function wrapAsync(fn) {
  try {
    return await fn();
  } catch (e) {
    throw toWispError(e);
  }
}

function checkApprove(approve) {
  if (approve !== undefined && typeof approve !== "function") {
    throw new WispError("INVALID_REQUEST", `approve is ${typeof approve}; it must be a function (call) => boolean`);
  }
}

// By default one tool result may fill a quarter of the model's context (256 tokens of the bundled model's
// 1,024), so that a long result leaves room for the conversation and the answer.
const RESULT_SHARE_OF_CONTEXT = 4;

function splitOptions(model, options) {
  const { system, toolCallFormat, maxResultChars, maxHistoryTokens, ...rest } = options;
  checkApprove(rest.approve);
  checkCount(maxResultChars, "maxResultChars");
  checkCount(rest.maxResultTokens, "maxResultTokens");
  checkCount(maxHistoryTokens, "maxHistoryTokens");
  checkCount(rest.maxSteps, "maxSteps");
  checkCount(rest.maxTokens, "maxTokens");
  checkContextPolicy(rest.contextPolicy);
  const maxResultTokens = rest.maxResultTokens ?? Math.max(1, Math.floor(model.contextLength / RESULT_SHARE_OF_CONTEXT));
  const precutChars = Math.min(maxResultChars ?? Infinity, maxResultTokens * MAX_CHARS_PER_TOKEN);
  return [
    { system, toolCallFormat: toolCallFormat ?? model.manifest?.tool_call_format, maxResultChars, maxResultTokens, maxHistoryTokens },
    { ...rest, precutChars },
  ];
}

/** An agent over a loaded `Model`: `{ model, system, contextPolicy, maxHistoryTokens, maxSteps, toolCallFormat, maxResultChars, maxResultTokens, temperature, maxTokens, toolChoice }`. */
export function createAgentFor(model, options = {}, release) {
  const [coreOptions, rest] = splitOptions(model, options);
  return new Agent(wrap(() => model.coreAgent(coreOptions)), rest, {
    release,
    alive: () => model.alive,
    queue: queueOf(model),
    prefix: prefixCacheFor(model),
  });
}

/** The same over a `WorkerModel`: the conversation lives in its worker, the loop and the tools on the page. */
export async function createWorkerAgentFor(model, options = {}, release) {
  const [coreOptions, rest] = splitOptions(model, options);
  return new Agent(await model.agentCore(coreOptions), rest, { release, queue: queueOf(model), prefix: prefixCacheFor(model) });
}
