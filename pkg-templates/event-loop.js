// A generation on the CPU backend runs token after token without waiting on anything, so its loop would
// hold the event loop until the answer ends: no click, no abort, no frame, no page unload. The loops that
// step the model call `breathe()` between steps; about every SLICE_MS it lets the event loop run.
const SLICE_MS = 8;
let last = 0;

// A message is a task without setTimeout's 4 ms clamp; the port is closed so Node can exit. Not
// `scheduler.yield()`: its continuation runs ahead of waiting tasks, so timers would still never run.
function nextTask() {
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      resolve();
    };
    channel.port2.postMessage(null);
  });
}

/** Resolves at once, or after the event loop has run when the last pause was SLICE_MS ago or more. */
export async function breathe() {
  if (performance.now() - last < SLICE_MS) return;
  await nextTask();
  last = performance.now();
}
