// `import "wisp-agent/threads"`: worker mode starts workers that can run the CPU backend on several
// threads (in a cross-origin isolated page). Without this import the threaded module is never referenced,
// so bundlers leave its wasm out of the app and worker-mode models run on one thread.
import { threading } from "./threading.js";

threading.worker = () => new Worker(new URL("./worker-threads.js", import.meta.url), { type: "module" });
