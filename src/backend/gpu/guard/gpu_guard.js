// Watches the GPU devices that wonnx creates, so that nothing the GPU reports is lost.
//
// wonnx (through wgpu 0.16) never listens for WebGPU errors: a shader that the browser rejects, a validation
// error or a lost device leave a console warning and an all-zero output. We wrap
// GPUAdapter.prototype.requestDevice once and, only while a Wisp session is being created, attach
// listeners to the new device: `uncapturederror`, `lost`, and the compilation info of every shader module.
// The Rust side calls `check(id)` after creating a session and after each run, and turns what it returns
// into a typed error.

const records = new Map();
let nextId = 1;
let capturing = null;
let captureQueue = Promise.resolve();
let patched = false;

function patchRequestDevice() {
  if (patched || typeof GPUAdapter === "undefined") return;
  patched = true;
  const original = GPUAdapter.prototype.requestDevice;
  GPUAdapter.prototype.requestDevice = async function requestDevice(...args) {
    const device = await original.apply(this, args);
    if (capturing && !capturing.device) watch(device, this, capturing);
    return device;
  };
}

function describeAdapter(adapter) {
  const info = adapter.info || {};
  return {
    vendor: info.vendor || "",
    architecture: info.architecture || "",
    device: info.device || "",
    description: info.description || "",
    isFallbackAdapter: Boolean(info.isFallbackAdapter || adapter.isFallbackAdapter),
    maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
    maxBufferSize: adapter.limits.maxBufferSize,
  };
}

function errorKind(error) {
  if (typeof GPUOutOfMemoryError !== "undefined" && error instanceof GPUOutOfMemoryError) return "out_of_memory";
  if (typeof GPUValidationError !== "undefined" && error instanceof GPUValidationError) return "validation";
  return "internal";
}

// Buffers of watched devices that are still alive: a buffer ends when destroyed, when the garbage collector
// takes it (wgpu's web backend drops buffers without destroying them), or with its device.
const collected =
  typeof FinalizationRegistry === "undefined" ? null : new FinalizationRegistry((entry) => forget(entry));

function forget(entry) {
  if (!entry.alive) return;
  entry.alive = false;
  entry.record.buffers -= 1;
  entry.record.bytes -= entry.size;
}

function countBuffers(device, record) {
  const createBuffer = device.createBuffer;
  device.createBuffer = function (descriptor) {
    const buffer = createBuffer.call(this, descriptor);
    // The entry must not reference the buffer, or the registry would keep it alive.
    const entry = { record, size: Number(descriptor.size) || 0, alive: true };
    record.buffers += 1;
    record.bytes += entry.size;
    collected?.register(buffer, entry);
    const destroy = buffer.destroy;
    buffer.destroy = function () {
      forget(entry);
      return destroy.call(this);
    };
    return buffer;
  };
}

function watch(device, adapter, record) {
  record.device = device;
  record.adapter = describeAdapter(adapter);
  countBuffers(device, record);
  device.addEventListener("uncapturederror", (event) => {
    record.errors.push({ kind: errorKind(event.error), message: event.error.message });
  });
  device.lost.then((info) => {
    record.lost = { kind: "device_lost", message: `${info.reason || "unknown"}: ${info.message}` };
  });
  const createShaderModule = device.createShaderModule;
  device.createShaderModule = function (descriptor) {
    const module = createShaderModule.call(this, descriptor);
    const label = descriptor.label ? `shader '${descriptor.label}'` : "a shader";
    record.pending.push(
      module.getCompilationInfo().then((info) => {
        for (const m of info.messages) {
          if (m.type === "error") {
            record.errors.push({ kind: "shader", message: `${label}, line ${m.lineNum}:${m.linePos}: ${m.message}` });
          }
        }
      }),
    );
    return module;
  };
}

/** Asks the browser for an adapter; returns its description, or a string saying why there is none. */
export async function probe() {
  if (typeof navigator === "undefined" || !navigator.gpu) {
    return "navigator.gpu is missing (this browser or context has no WebGPU; in Chromium on Linux it needs --enable-unsafe-webgpu)";
  }
  let adapter;
  try {
    adapter = await navigator.gpu.requestAdapter();
  } catch (e) {
    return `navigator.gpu.requestAdapter() threw: ${e && e.message}`;
  }
  if (!adapter) return "navigator.gpu.requestAdapter() returned no adapter (GPU blocklisted or disabled)";
  return describeAdapter(adapter);
}

/** Starts watching the next device created; sessions are created one at a time. Resolves to a record id. */
export function beginCapture() {
  patchRequestDevice();
  const previous = captureQueue;
  let release;
  captureQueue = new Promise((resolve) => (release = resolve));
  return previous.then(() => {
    const id = nextId++;
    capturing = { id, device: null, adapter: null, errors: [], pending: [], lost: null, unlock: release, buffers: 0, bytes: 0 };
    records.set(id, capturing);
    return id;
  });
}

/** Stops capturing; returns the adapter the watched device came from, or null if no device was created. */
export function endCapture(id) {
  const record = records.get(id);
  if (capturing && capturing.id === id) {
    capturing = null;
    record.unlock();
  }
  return record && record.device ? record.adapter : null;
}

/**
 * Waits until the GPU has reported everything about the work submitted so far, then returns the first
 * problem as { kind, message } (with the count of further ones in the message), or null when all is well.
 */
export async function check(id) {
  const record = records.get(id);
  if (!record || !record.device) return { kind: "internal", message: "no GPU device is attached to this session" };
  if (record.lost) return record.lost;
  const pending = record.pending.splice(0);
  await Promise.all(pending);
  await Promise.race([record.device.queue.onSubmittedWorkDone(), record.device.lost]);
  // uncapturederror events are dispatched as tasks: let the ones already queued run.
  await new Promise((resolve) => setTimeout(resolve, 0));
  if (record.lost) return record.lost;
  const errors = record.errors.splice(0);
  if (errors.length === 0) return null;
  // A rejected shader also invalidates its pipeline, which then shows up as validation errors: name the
  // root cause first.
  const first = errors.find((e) => e.kind === "shader") ?? errors[0];
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more GPU error(s))` : "";
  return { kind: first.kind, message: first.message + more };
}

/** Forgets a session's device and frees its GPU memory. */
export function release(id) {
  const record = records.get(id);
  records.delete(id);
  if (record && record.device) record.device.destroy();
}

/** Simulates a device loss (tests and the "reload" path of apps). */
export function loseDevice(id) {
  const record = records.get(id);
  if (record && record.device) record.device.destroy();
}

/**
 * The GPU devices Wisp holds and their buffers still alive (count and bytes), for leak checks: closing a
 * session returns its device and every buffer with it.
 */
export function resources() {
  let devices = 0;
  let buffers = 0;
  let bytes = 0;
  for (const record of records.values()) {
    if (!record.device) continue;
    devices += 1;
    buffers += record.buffers;
    bytes += record.bytes;
  }
  return { devices, buffers, bytes };
}
