// A Vite app that uses wisp-agent like any dependency: `vite build` must find the .wasm, the worker and the
// models that ship in the package on its own. It runs one agent task on the default model (wisp-mini,
// from inside the package) on the page and one in worker mode; with `?base=URL` (where the page serves
// SmolLM2-135M-Instruct.Q4_1.gguf) it runs one on wisp-agent instead. The outcome is left in
// window.outcome for the test.
import { createAgent } from "wisp-agent";
import { wispAgent } from "wisp-agent/models/wisp-agent";

const weather = {
  name: "get_weather",
  description: "Get the current weather for a city.",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

async function task(options) {
  const agent = await createAgent({ ...options, system: "You are a helpful assistant." });
  agent.tool(weather, ({ city }) => ({ city, temperature_c: 18, condition: "sunny" }));
  const events = [];
  await agent.run("What's the weather in Paris?", { onEvent: (e) => events.push(e) });
  agent.close();
  return events.filter((e) => e.type === "tool_call" || e.type === "final");
}

async function main() {
  const base = new URLSearchParams(location.search).get("base");
  try {
    window.outcome = base
      ? { agent: await task({ model: wispAgent({ base }), load: { backend: "cpu" } }) }
      : { page: await task({}), worker: await task({ worker: true }) };
  } catch (e) {
    window.outcome = { error: `${e.code ?? e.name}: ${e.message}` };
  }
  document.getElementById("out").textContent = JSON.stringify(window.outcome);
}

main();
