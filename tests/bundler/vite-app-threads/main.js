// A Vite app that opts in to threads: `import "wisp-agent/threads"` makes worker mode start the threaded
// CPU module, which `vite build` must then emit. Served cross-origin isolated, the model runs on 2 threads;
// the model is the one inside the package. The outcome is left in window.outcome for the test.
import { WorkerModel } from "wisp-agent";
import { wispMini } from "wisp-agent/models/wisp-mini";
import "wisp-agent/threads";

async function main() {
  try {
    const model = await WorkerModel.load(wispMini, { backend: "cpu", threads: 2 });
    const result = await model.generate("Hello!", { maxTokens: 8 });
    window.outcome = { backend: model.backend, tokens: result.tokens.length };
    model.close();
  } catch (e) {
    window.outcome = { error: `${e.code ?? e.name}: ${e.message}` };
  }
  document.getElementById("out").textContent = JSON.stringify(window.outcome);
}

main();
