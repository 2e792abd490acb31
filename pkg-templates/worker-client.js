// Worker mode, page side: the same Model API (its methods all return promises here), with the model in a
// dedicated Web Worker (worker.js). Large model bytes are transferred, not copied; an AbortSignal aborts
// the call in the worker.
import { WispError } from "./errors.js";
import { resolveUrl } from "./fetch.js";
import { keepPrefixesOf } from "./prefix-cache.js";
import { checkInput } from "./requests.js";
import { queueOf } from "./queue.js";
import { threading } from "./threading.js";
import { streamWithResult } from "./streams.js";

function toError(error) {
  if (error.name === "AbortError") return new DOMException(error.message, "AbortError");
  return error.code ? new WispError(error.code, error.message) : new WispError("INTERNAL", error.message);
}

class Channel {
  #worker;
  #next = 1;
  #calls = new Map();
  #closed = false;

  constructor(worker) {
    this.#worker = worker;
    worker.addEventListener("message", ({ data }) => {
      const call = this.#calls.get(data.id);
      if (!call) return;
      if (data.event) {
        call.onEvent?.(data.event, data.data);
        return;
      }
      this.#calls.delete(data.id);
      if (data.ok) call.resolve(data.value);
      else call.reject(toError(data.error));
    });
    worker.addEventListener("error", (e) => {
      const error = new WispError("WORKER_FAILED", `the Wisp worker failed: ${e.message ?? "unknown error"}`);
      for (const call of this.#calls.values()) call.reject(error);
      this.#calls.clear();
    });
  }

  call(op, args = {}, { onEvent, signal, transfer = [] } = {}) {
    if (this.#closed) return Promise.reject(new WispError("SESSION_CLOSED", "the worker was closed"));
    if (signal?.aborted) return Promise.reject(signal.reason ?? new DOMException("aborted", "AbortError"));
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#calls.set(id, { resolve, reject, onEvent });
      signal?.addEventListener("abort", () => this.#worker.postMessage({ id: this.#next++, op: "abort", args: { target: id } }), { once: true });
      this.#worker.postMessage({ id, op, args }, transfer);
    });
  }

  terminate() {
    this.#closed = true;
    this.#worker.terminate();
    const error = new WispError("SESSION_CLOSED", "the worker was closed");
    for (const call of this.#calls.values()) call.reject(error);
    this.#calls.clear();
  }
}

// Bytes cross to the worker by transfer: the caller's buffer is detached afterwards.
function transferable(source) {
  const list = [];
  const take = (v) => {
    if (v instanceof ArrayBuffer) list.push(v);
    else if (ArrayBuffer.isView(v) && v.byteOffset === 0 && v.byteLength === v.buffer.byteLength) list.push(v.buffer);
  };
  take(source);
  if (source && typeof source === "object") for (const v of Object.values(source)) take(v);
  if (source?.files && typeof source.files === "object") for (const v of Object.values(source.files)) take(v);
  return list;
}

// `source` with its URLs made absolute by `absolute` (and so strings, which a worker can receive).
function absoluteSource(source, absolute) {
  if (!source || typeof source !== "object" || source instanceof URL || ArrayBuffer.isView(source) || source instanceof ArrayBuffer) {
    return absolute(source);
  }
  const out = { ...source };
  for (const key of ["bundle", "weights", "tokenizer"]) if (key in out) out[key] = absolute(out[key]);
  if (out.files && typeof out.files === "object") {
    out.files = Object.fromEntries(Object.entries(out.files).map(([path, where]) => [path, absolute(where)]));
  }
  return out;
}

export class WorkerModel {
  #channel;
  #info;

  constructor(channel, info) {
    this.#channel = channel;
    this.#info = info;
  }

  /** As `Model.load`, with the model in a new module worker (or `options.worker`). */
  static async load(source, options = {}) {
    const { onProgress, signal, worker, ...rest } = options;
    // URLs relative to the page, made absolute here: in the worker they would be relative to worker.js.
    const absolute = (u) => (typeof u === "string" || u instanceof URL ? String(resolveUrl(u)) : u);
    if (Array.isArray(rest.adapters)) rest.adapters = rest.adapters.map((a) => (a?.url === undefined ? a : { ...a, url: absolute(a.url) }));
    if (rest.baseWeights !== undefined) rest.baseWeights = absolute(rest.baseWeights);
    source = absoluteSource(source, absolute);
    const channel = new Channel(worker ?? threading.worker?.() ?? new Worker(new URL("./worker.js", import.meta.url), { type: "module" }));
    try {
      const info = await channel.call("load", { source, options: rest }, {
        onEvent: (event, data) => event === "progress" && onProgress?.(data),
        signal,
        transfer: transferable(source),
      });
      const model = new WorkerModel(channel, info);
      keepPrefixesOf(model, { manifest: info.manifest, backend: info.backend, cache: rest.cache ?? true, adapters: rest.adapters ?? [] });
      return model;
    } catch (e) {
      channel.terminate();
      throw e;
    }
  }

  get config() {
    return this.#info.config;
  }

  get contextLength() {
    return this.#info.contextLength;
  }

  get manifest() {
    return this.#info.manifest;
  }

  /** `{ kind: "webgpu" | "cpu", reason, threads }`: where the model runs in the worker, why, and on how many threads. */
  get backend() {
    return this.#info.backend;
  }

  length() {
    return this.#channel.call("length");
  }

  encode(text) {
    return this.#channel.call("encode", { text });
  }

  decode(ids) {
    return this.#channel.call("decode", { ids: Array.from(ids) });
  }

  renderChat(messages, options = {}) {
    try {
      checkInput(messages, "messages");
      checkInput(options.tools, "tools", "INVALID_TOOL");
    } catch (e) {
      return Promise.reject(e);
    }
    return this.#channel.call("renderChat", { messages, options });
  }

  forward(ids) {
    return queueOf(this).run({ wait: false }, () => this.#channel.call("forward", { ids: Array.from(ids) }));
  }

  seek(position) {
    return this.#channel.call("seek", { position });
  }

  /** As `Model.profile`: where the worker's time went. */
  profile() {
    return this.#channel.call("profile");
  }

  resetProfile() {
    return this.#channel.call("resetProfile");
  }

  /** As `Model.generate`; `onText` runs on the page. */
  generate(input, options = {}) {
    const { signal, onText, ...rest } = options;
    // Checked here too: a value that cannot cross into wasm may not even survive the structured clone.
    try {
      checkInput(input, "the input");
      checkInput(rest.responseFormat, "responseFormat", "RESPONSE_FORMAT");
    } catch (e) {
      return Promise.reject(e);
    }
    return queueOf(this).run({ signal, wait: rest.wait }, () =>
      this.#channel.call("generate", { input: plain(input), options: rest }, {
        signal,
        onEvent: (event, data) => event === "delta" && onText?.(data.text, data),
      }),
    );
  }

  /** As `Model.stream`: an async iterator of deltas, with `.result`. */
  stream(input, options = {}) {
    const self = this;
    return streamWithResult(async function* (done) {
      const queue = [];
      let wake = null;
      let finished = false;
      const running = self.generate(input, {
        ...options,
        onText: (_, delta) => {
          queue.push(delta);
          wake?.();
        },
      });
      running.then(
        () => ((finished = true), wake?.()),
        () => ((finished = true), wake?.()),
      );
      try {
        for (;;) {
          if (queue.length) yield queue.shift();
          else if (finished) break;
          else {
            await new Promise((resolve) => (wake = resolve));
            wake = null;
          }
        }
      } finally {
        // Left early or not, the generation in the worker runs to its end: `.result` follows it.
        done(running);
      }
      await running;
    });
  }

  /** The core of an agent on this model, for `createAgent`: its conversation lives in the worker. */
  async agentCore(options) {
    return new RemoteAgent(this.#channel, await this.#channel.call("agentCreate", { options }));
  }

  close() {
    this.#channel.terminate();
  }
}

// The worker-side agent as agent.js's Agent sees it: the same methods as the wasm Agent, each returning a
// promise. The loop, the tools and the events stay on the page.
class RemoteAgent {
  #channel;
  #handle;

  constructor(channel, handle) {
    this.#channel = channel;
    this.#handle = handle;
  }

  #call(method, ...args) {
    return this.#channel.call("agentCall", { handle: this.#handle, method, args });
  }

  addTool(spec) {
    return this.#call("addTool", spec);
  }

  removeTool(name) {
    return this.#call("removeTool", name);
  }

  pushUser(text) {
    return this.#call("pushUser", text);
  }

  pushToolResult(id, name, result, omitted) {
    return this.#call("pushToolResult", id, name, result, omitted);
  }

  pushAssistant(text, calls) {
    return this.#call("pushAssistant", text, calls);
  }

  reset() {
    return this.#call("reset");
  }

  truncate(length) {
    return this.#call("truncate", length);
  }

  contextUsage(maxTokens) {
    return this.#call("contextUsage", maxTokens);
  }

  fitContext(maxTokens) {
    return this.#call("fitContext", maxTokens);
  }

  setHistory(messages) {
    return this.#call("setHistory", messages);
  }

  prefix() {
    return this.#call("prefix");
  }

  savePrefix() {
    return this.#call("savePrefix");
  }

  restoreCache(bytes) {
    return this.#call("restoreCache", bytes);
  }

  get messages() {
    return this.#channel.call("agentMessages", { handle: this.#handle });
  }

  get messageCount() {
    return this.#channel.call("agentMessageCount", { handle: this.#handle });
  }

  async startTurn(request, toolChoice) {
    return new RemoteTurn(this.#channel, await this.#channel.call("turnStart", { handle: this.#handle, request, toolChoice }));
  }

  free() {
    this.#channel.call("agentFree", { handle: this.#handle }).catch(() => {});
  }
}

class RemoteTurn {
  #channel;
  #handle;
  usage = null;

  constructor(channel, handle) {
    this.#channel = channel;
    this.#handle = handle;
  }

  async step() {
    const step = await this.#channel.call("turnStep", { handle: this.#handle });
    if (step.usage) this.usage = step.usage;
    return step;
  }

  free() {
    this.#channel.call("turnFree", { handle: this.#handle }).catch(() => {});
  }
}

function plain(input) {
  return input instanceof Uint32Array ? Array.from(input) : input;
}
