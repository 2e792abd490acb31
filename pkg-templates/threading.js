// Where threads come from. The threaded CPU module (wisp_core_mt*, about 12 MB with its relaxed build) is
// referenced only by worker-threads.js, which `import "wisp-agent/threads"` (threads.js) puts in place of
// worker.js: bundlers then emit it only for apps that ask for threads. Both fields stay null otherwise.
export const threading = {
  // `(threads) => Promise<module>`: starts the threaded module with a pool of `threads` (set in the worker).
  load: null,
  // `() => Worker`: the worker that worker mode starts (set on the page by threads.js).
  worker: null,
};
