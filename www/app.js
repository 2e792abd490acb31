// The demo: a chat with the agent, a trace of every tool call, load progress, stop, and speed. The model
// runs in a Web Worker (worker mode), the tools here on the page. Everything the model writes is shown
// with textContent: model text is never HTML. A service worker (sw.js) makes it work offline.
import { adapterInfo, createAgent, WorkerModel } from "../pkg/index.js";
import { WISP_AGENT_BASE } from "../pkg/models/wisp-agent.js";
// Served cross-origin isolated (`node tools/serve.mjs --isolated`), the models run on several threads.
import "../pkg/threads.js";
import { demoTools } from "./tools.js";

const $ = (id) => document.getElementById(id);
const SOURCES = {
  agent: { bundle: new URL("../models/wisp-agent/manifest.json", import.meta.url).href },
  bundled: { bundle: new URL("../models/wisp-mini/manifest.json", import.meta.url).href },
  smollm2: new URL("../models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", import.meta.url).href,
};
// wisp-agent's base, linked beside its manifest by tools/fetch-smollm2.sh (which the set-up runs).
const AGENT_BASE = new URL(`../models/wisp-agent/${WISP_AGENT_BASE.name}`, import.meta.url).href;

let model = null;
let agent = null;
let controller = null;
// What the page found about WebGPU, kept in view next to "Ready".
let gpuNote = "";
// Why the tiny fallback runs instead of wisp-agent, when it does; also kept in view.
let fallbackNote = "";

function status(text, error = false) {
  $("status").textContent = text;
  $("status").className = error ? "error" : "";
}

function bubble(kind, text = "") {
  const li = document.createElement("li");
  li.className = kind;
  li.textContent = text;
  $("chat").append(li);
  li.scrollIntoView({ block: "end" });
  return li;
}

function setBusy(busy) {
  $("question").disabled = busy || !agent;
  $("send").disabled = busy || !agent;
  $("stop").disabled = !busy;
  $("load").disabled = busy;
}

async function load(source) {
  setBusy(true);
  $("progress").hidden = false;
  $("progress").removeAttribute("value");
  agent?.close();
  model?.close();
  agent = null;
  model = null;
  try {
    model = await WorkerModel.load(source, {
      // A GGUF file has no manifest to size the context, and the default 512 tokens cannot hold the demo's
      // tools once they go into the system message (about 550 tokens with SmolLM2's template).
      contextLen: typeof source === "string" ? 2048 : undefined,
      onProgress: (e) => {
        if (e.phase === "download" && e.total) $("progress").value = e.loaded / e.total;
        else $("progress").removeAttribute("value");
        status(e.phase === "download" ? `Downloading ${e.file.split("/").pop()}…` : e.phase === "build" ? "Building and compiling the model…" : "Ready.");
      },
    });
    agent = await createAgent({ model, system: "You are a helpful assistant." });
    for (const [spec, fn] of demoTools) agent.tool(spec, fn);
    const { kind, threads } = model.backend;
    const where = kind === "cpu" ? `the CPU${threads > 1 ? ` (${threads} threads)` : ""}` : "WebGPU";
    const name = model.manifest?.name ?? (typeof source === "string" ? source.split("/").pop() : "the model");
    status(`${gpuNote} Ready. ${name} runs on ${where} in a Web Worker (${model.backend.reason}).${source === SOURCES.bundled ? fallbackNote : ""} Ask about the weather, the time, a calculation, a unit conversion, or your notes.`);
  } catch (e) {
    model?.close();
    agent = null;
    model = null;
    status(`Could not load the model (${e.code ?? e.name}): ${e.message}`, true);
  } finally {
    $("progress").hidden = true;
    setBusy(false);
  }
}

async function ask(question) {
  bubble("user", question);
  let answer = null;
  const calls = new Map();
  controller = new AbortController();
  setBusy(true);
  try {
    const result = await agent.run(question, {
      signal: controller.signal,
      onEvent: (e) => {
        if (e.type === "step_start") answer = null;
        if (e.type === "text") {
          answer ??= bubble("assistant");
          answer.textContent += e.text;
        }
        if (e.type === "tool_call") calls.set(e.id, bubble("tool", `→ ${e.name}(${JSON.stringify(e.arguments)})`));
        if (e.type === "tool_result") calls.get(e.id).textContent += `\n← ${JSON.stringify(e.result)}  (${e.ms.toFixed(0)} ms)`;
        if (e.type === "tool_error") {
          const li = calls.get(e.id) ?? bubble("tool", `→ ${e.name ?? "?"}(…)`);
          li.classList.add("failed");
          li.textContent += `\n✗ ${e.error}${e.ms === undefined ? "" : `  (${e.ms.toFixed(0)} ms)`}`;
        }
      },
    });
    const u = result.usage;
    $("speed").textContent = `${u.completionTokens} tokens in ${(u.totalMs / 1000).toFixed(1)} s · ${((u.completionTokens * 1000) / u.totalMs).toFixed(1)} tokens/s · ${u.cachedTokens} prompt tokens reused`;
    if (!result.text && result.finishReason === "max_steps") bubble("assistant", "(stopped after too many tool calls)");
  } catch (e) {
    bubble("assistant", e.name === "AbortError" ? "(stopped)" : `(error ${e.code ?? e.name}: ${e.message})`);
  } finally {
    controller = null;
    setBusy(false);
  }
}

// Offline: the service worker stores the app, the package and the models on the first visit (wisp-agent
// where its base is served; always wisp-mini, the fallback).
async function registerServiceWorker() {
  if (!("serviceWorker" in navigator)) return;
  try {
    await navigator.serviceWorker.register(new URL("sw.js", import.meta.url), { scope: new URL("../", import.meta.url).href });
    await navigator.serviceWorker.ready;
    const agentStored = await caches.match(AGENT_BASE);
    $("offline").textContent = `Stored for offline use: this page, the package and ${agentStored ? "both models (wisp-agent and wisp-mini)" : "wisp-mini"} work without a network.`;
  } catch (e) {
    $("offline").textContent = `Not available offline (${e.message}).`;
  }
}

// The tools in view: the source of tools.js, as text.
async function showTools() {
  try {
    $("tools-source").textContent = await (await fetch(new URL("tools.js", import.meta.url))).text();
  } catch {
    $("tools-source").textContent = "(could not load tools.js)";
  }
}

async function main() {
  registerServiceWorker();
  showTools();
  try {
    const info = await adapterInfo();
    gpuNote = `WebGPU: ${[info.vendor, info.architecture, info.description].filter(Boolean).join(" / ")}${info.isFallbackAdapter ? " (software: Wisp uses its CPU backend)." : "."}`;
  } catch (e) {
    gpuNote = `WebGPU is not available here (${e.message}); Wisp runs on the CPU.`;
  }
  status(`${gpuNote} Looking for wisp-agent's base model…`);
  // Offline, the service worker's store stands in for the server (it answers GETs only).
  const served = async (file) =>
    (await fetch(file, { method: "HEAD" }).catch(() => null))?.ok === true || (await globalThis.caches?.match(file)) !== undefined;
  const [agentServed, smollm2Served] = await Promise.all([served(AGENT_BASE), served(SOURCES.smollm2)]);
  $("model-choice").querySelector('[value="agent"]').disabled = !agentServed;
  $("model-choice").querySelector('[value="smollm2"]').disabled = !smollm2Served;
  $("model-choice").value = agentServed ? "agent" : "bundled";
  if (!agentServed) fallbackNote = " wisp-agent's base model is not served here (bash tools/fetch-smollm2.sh gets it), so the tiny fallback runs: it knows only these six tools.";
  $("model-choice").addEventListener("change", () => ($("model-url").hidden = $("model-choice").value !== "url"));
  $("model-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const choice = $("model-choice").value;
    load(choice === "url" ? $("model-url").value : SOURCES[choice]);
  });
  $("ask").addEventListener("submit", (e) => {
    e.preventDefault();
    const q = $("question").value.trim();
    if (q && agent) {
      $("question").value = "";
      ask(q);
    }
  });
  $("stop").addEventListener("click", () => controller?.abort());
  await load(agentServed ? SOURCES.agent : SOURCES.bundled);
}

main();
