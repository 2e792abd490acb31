// A Vite app that imports wisp-agent like any dependency: `vite build` must find the .wasm and the worker
// on its own. It runs one agent task on the page and one in worker mode, and leaves the outcome in
// window.outcome for the test.
import { createAgent } from "wisp-agent";

const weather = {
  name: "get_weather",
  description: "Get the current weather for a city.",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

async function task(worker) {
  const agent = await createAgent({
    model: { bundle: new URL("models/wisp-mini/manifest.json", location.href).href },
    worker,
    system: "You are a helpful assistant.",
  });
  agent.tool(weather, ({ city }) => ({ city, temperature_c: 18, condition: "sunny" }));
  const events = [];
  await agent.run("What's the weather in Paris?", { onEvent: (e) => events.push(e) });
  agent.close();
  return events.filter((e) => e.type === "tool_call" || e.type === "final");
}

async function main() {
  try {
    window.outcome = { page: await task(false), worker: await task(true) };
  } catch (e) {
    window.outcome = { error: `${e.code ?? e.name}: ${e.message}` };
  }
  document.getElementById("out").textContent = JSON.stringify(window.outcome);
}

main();
