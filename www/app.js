// The demo page: reports the WebGPU adapter and runs a small graph through the wisp-agent package.
import { adapterInfo, GraphSession } from "../pkg/index.js";

const $ = (id) => document.getElementById(id);

function show(id, text, kind) {
  const el = $(id);
  el.textContent = text;
  el.className = kind ?? "";
}

function describeAdapter(info) {
  const details = $("gpu-details");
  const rows = {
    Vendor: info.vendor || "(not given)",
    Architecture: info.architecture || "(not given)",
    Description: info.description || "(not given)",
    "Software adapter": info.isFallbackAdapter ? "yes" : "no",
    "Max storage binding": `${(info.maxStorageBufferBindingSize / 2 ** 20).toFixed(0)} MiB`,
  };
  for (const [name, value] of Object.entries(rows)) {
    const dt = document.createElement("dt");
    dt.textContent = name;
    const dd = document.createElement("dd");
    dd.textContent = value;
    details.append(dt, dd);
  }
  details.hidden = false;
}

async function gpuCheck() {
  const [session, reference] = await Promise.all([
    GraphSession.create(new URL("../tests/fixtures/matmul.onnx", import.meta.url)),
    fetch(new URL("../tests/fixtures/matmul.json", import.meta.url)).then((r) => r.json()),
  ]);
  const feeds = Object.fromEntries(
    Object.entries(reference.inputs).map(([name, v]) => [name, new Float32Array(v.data)]),
  );
  const started = performance.now();
  const out = await session.run(feeds);
  const ms = performance.now() - started;
  session.close();
  const want = reference.outputs.y.data;
  const diff = out.y.data.reduce((m, v, i) => Math.max(m, Math.abs(v - want[i])), 0);
  return { diff, ms };
}

async function main() {
  let info;
  try {
    info = await adapterInfo();
  } catch (e) {
    show("gpu-status", `WebGPU is not available here, so Wisp cannot run on the GPU: ${e.message}`, "error");
    show("check-status", "Skipped: no WebGPU.", "error");
    return;
  }
  show("gpu-status", "WebGPU adapter found.", "ok");
  describeAdapter(info);
  try {
    const { diff, ms } = await gpuCheck();
    const good = diff <= 1e-4;
    show(
      "check-status",
      `${good ? "Passed" : "FAILED"}: MatMul 8×16 · 16×12 in ${ms.toFixed(1)} ms, max |difference| from onnxruntime ${diff.toExponential(1)}.`,
      good ? "ok" : "error",
    );
  } catch (e) {
    show("check-status", `Failed (${e.code ?? e.name}): ${e.message}`, "error");
  }
}

main();
