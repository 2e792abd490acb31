// The worker side of worker mode: runs a Model in a dedicated Web Worker, so that loading, graph building
// and generation never block the page. An agent's conversation and turns live here too (ops agent*,
// turn*); its loop and its tools stay on the page. worker-client.js is the page side; messages:
//   page -> worker: { id, op, args }
//   worker -> page: { id, event, data } while a call runs (progress, delta), then
//                   { id, ok: true, value } or { id, ok: false, error: { name, code, message } }
import { Model } from "./index.js";
import { crashedError, toWispError } from "./errors.js";

let model = null;
const controllers = new Map();
// Agents and their turns, by the handle the page holds.
const handles = new Map();
let nextHandle = 1;

function keep(object) {
  const handle = nextHandle++;
  handles.set(handle, object);
  return handle;
}

function held(handle) {
  requireModel();
  const object = handles.get(handle);
  if (!object) throw Object.assign(new Error("this agent was closed"), { name: "WispError", code: "SESSION_CLOSED" });
  return object;
}

function release(handle) {
  // Objects of a crashed instance are dropped, not freed: that memory is not entered again.
  if (model?.alive) handles.get(handle)?.free();
  handles.delete(handle);
}

function serializeError(e) {
  return { name: e?.name ?? "Error", code: e?.code, message: e?.message ?? String(e) };
}

function requireModel() {
  if (!model) throw Object.assign(new Error("no model is loaded in this worker"), { name: "WispError", code: "SESSION_CLOSED" });
  if (!model.alive) throw crashedError();
  return model;
}

// The core agent methods the page's Agent calls through agentCall.
const AGENT_METHODS = new Set(["addTool", "removeTool", "pushUser", "pushToolResult", "pushAssistant", "reset", "truncate", "contextUsage", "fitContext", "setHistory", "prefix", "savePrefix", "restoreCache"]);

const ops = {
  async load({ source, options }, id) {
    model?.close();
    model = null;
    const signal = controllers.get(id).signal;
    model = await Model.load(source, {
      ...options,
      signal,
      onProgress: (data) => postMessage({ id, event: "progress", data }),
    });
    return { config: model.config, contextLength: model.contextLength, manifest: model.manifest, backend: model.backend };
  },
  async generate({ input, options }, id) {
    const signal = controllers.get(id).signal;
    const stream = requireModel().stream(input, { ...options, signal });
    for await (const delta of stream) postMessage({ id, event: "delta", data: delta });
    return stream.result;
  },
  encode: ({ text }) => requireModel().encode(text),
  decode: ({ ids }) => requireModel().decode(ids),
  renderChat: ({ messages, options }) => requireModel().renderChat(messages, options),
  forward: ({ ids }) => requireModel().forward(ids),
  seek: ({ position }) => requireModel().seek(position),
  length: () => requireModel().length,
  profile: () => requireModel().profile(),
  resetProfile: () => requireModel().resetProfile(),
  abort({ target }) {
    controllers.get(target)?.abort(new DOMException("aborted by the page", "AbortError"));
  },
  agentCreate: ({ options }) => keep(requireModel().coreAgent(options)),
  agentCall({ handle, method, args }) {
    if (!AGENT_METHODS.has(method)) throw Object.assign(new Error(`unknown agent method '${method}'`), { name: "WispError", code: "INTERNAL" });
    return held(handle)[method](...args);
  },
  agentMessages: ({ handle }) => held(handle).messages,
  agentMessageCount: ({ handle }) => held(handle).messageCount,
  agentFree: ({ handle }) => release(handle),
  turnStart: async ({ handle, request, toolChoice }) => keep(await held(handle).startTurn(request, toolChoice)),
  // The last step also carries the turn's usage, so that the page needs no extra round trip.
  async turnStep({ handle }) {
    const turn = held(handle);
    const step = await turn.step();
    return step.finish ? { ...step, usage: turn.usage } : step;
  },
  turnFree: ({ handle }) => release(handle),
  close() {
    for (const handle of handles.keys()) release(handle);
    model?.close();
    model = null;
  },
};

self.onmessage = async ({ data: { id, op, args } }) => {
  const handler = ops[op];
  controllers.set(id, new AbortController());
  try {
    if (!handler) throw Object.assign(new Error(`unknown operation '${op}'`), { name: "WispError", code: "INTERNAL" });
    const value = await handler(args ?? {}, id);
    const transfer = value instanceof Float32Array || value instanceof Uint32Array ? [value.buffer] : [];
    postMessage({ id, ok: true, value }, transfer);
  } catch (e) {
    postMessage({ id, ok: false, error: serializeError(toWispError(e)) });
  } finally {
    controllers.delete(id);
  }
};
