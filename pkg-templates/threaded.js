// The threaded CPU module (`wisp_core_mt*`: the CPU backend only, its products on Web Workers sharing the
// module's memory). Imported only by worker-threads.js (see threading.js), so that bundlers emit its wasm
// only for apps that import "wisp-agent/threads".
import { WispError, crashCount, freshImport, onCrash } from "./errors.js";

let threaded = null;

// After a trap the next load starts a new instance (errors.js).
onCrash(() => {
  threaded = null;
});

/**
 * Loads the module once per worker, with a pool of `threads` (it keeps the size it started with);
 * `relaxed`: the relaxed-SIMD build, as the main module of this realm.
 */
export function initThreaded(threads, { relaxed }) {
  if (!threaded) {
    const wasm = relaxed ? new URL("./wisp_core_mt_relaxed_bg.wasm", import.meta.url) : new URL("./wisp_core_mt_bg.wasm", import.meta.url);
    threaded = (async () => {
      const mt = crashCount()
        ? await freshImport(relaxed ? "./wisp_core_mt_relaxed.js" : "./wisp_core_mt.js")
        : relaxed
          ? await import("./wisp_core_mt_relaxed.js")
          : await import("./wisp_core_mt.js");
      await mt.default({ module_or_path: wasm });
      await mt.initThreadPool(threads);
      return mt;
    })().catch((e) => {
      threaded = null;
      throw new WispError("WASM_LOAD", `could not start the threaded Wisp module from ${wasm}: ${e?.message ?? e}`);
    });
  }
  return threaded;
}
