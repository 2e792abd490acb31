// The side panel: the agent with the model in a Web Worker started from this page (extension service
// workers cannot host it), and one tool that reads the active tab's title through chrome.tabs. Model text
// is shown with textContent, never as HTML.
import { createAgent } from "./pkg/index.js";
import { WISP_AGENT_BASE, wispAgent } from "./pkg/models/wisp-agent.js";

const $ = (id) => document.getElementById(id);

// The tab the user is looking at: the active tab of the last focused window, other than this page (which
// is a tab itself when opened outside the side panel), else the most recently used one.
async function activeTab() {
  const self = await chrome.tabs.getCurrent();
  const tabs = (await chrome.tabs.query({})).filter((t) => t.id !== self?.id && !t.url?.startsWith(location.origin));
  const [focused] = await chrome.tabs.query({ active: true, lastFocusedWindow: true });
  return tabs.find((t) => t.id === focused?.id) ?? tabs.sort((a, b) => (b.lastAccessed ?? 0) - (a.lastAccessed ?? 0))[0];
}

export const tabTitle = [
  {
    name: "get_active_tab_title",
    description: "Get the title of the browser tab the user is looking at.",
    // No arguments: with additionalProperties false the grammar lets the model write only {}.
    parameters: { type: "object", properties: {}, additionalProperties: false },
  },
  async () => {
    const tab = await activeTab();
    if (!tab) throw new Error("no tab is open");
    return { title: tab.title, url: tab.url };
  },
];

function bubble(kind, text = "") {
  const li = document.createElement("li");
  li.className = kind;
  li.textContent = text;
  $("chat").append(li);
  li.scrollIntoView({ block: "end" });
  return li;
}

function setBusy(busy) {
  $("question").disabled = busy;
  $("send").disabled = busy;
  $("stop").disabled = !busy;
}

async function ask(agent, question) {
  bubble("user", question);
  const controller = new AbortController();
  $("stop").onclick = () => controller.abort();
  const calls = new Map();
  let answer = null;
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
          li.textContent += `\n✗ ${e.error}`;
        }
      },
    });
    if (result.finishReason === "max_steps") bubble("assistant", "(stopped after too many tool calls)");
  } catch (e) {
    bubble("assistant", e.name === "AbortError" ? "(stopped)" : `(error ${e.code ?? e.name}: ${e.message})`);
  } finally {
    setBusy(false);
  }
}

// wisp-agent's base, where tools/build-extension.mjs found it to copy; else the panel runs wisp-mini.
const BASE = new URL(`models/${WISP_AGENT_BASE.name}`, location.href);

async function hasBase() {
  try {
    const response = await fetch(BASE);
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}

async function main() {
  let agent;
  const agentModel = await hasBase();
  const name = agentModel ? "wisp-agent" : "wisp-mini (the tiny fallback: this extension was built without wisp-agent's base)";
  $("status").textContent = `Loading ${name}…`;
  try {
    agent = await createAgent({
      // wisp-agent's adapter ships in the package (pkg/models/), its base in models/; without `model`,
      // createAgent loads wisp-mini from the package.
      model: agentModel ? wispAgent({ base: BASE }) : undefined,
      worker: true,
      system: "You are a helpful assistant.",
      // The model ships inside the extension: no need for a second copy in the Cache API.
      load: {
        cache: false,
        onProgress: (e) => {
          $("progress").hidden = e.phase === "ready";
          if (e.phase === "download" && e.total) $("progress").value = e.loaded / e.total;
          else $("progress").removeAttribute("value");
        },
      },
    });
  } catch (e) {
    $("status").textContent = `Could not load the model (${e.code ?? e.name}): ${e.message}`;
    $("status").className = "error";
    return;
  }
  agent.tool(...tabTitle);
  $("status").textContent = `Ready. ${name} runs in this panel; its tool reads the active tab's title.`;
  setBusy(false);
  $("ask").addEventListener("submit", (e) => {
    e.preventDefault();
    const q = $("question").value.trim();
    if (q && $("stop").disabled) {
      $("question").value = "";
      ask(agent, q);
    }
  });
}

main();
