// One model serves one call at a time (its key/value cache holds one sequence), so calls that share a model
// (several agents, `generate` calls, OpenAI requests) take turns in arrival order: each waits in the
// model's queue until the call before it is done. A waiting call can be aborted (it leaves the queue); a
// running one is never displaced. `wait: false` asks not to wait: BUSY when the model is in use.
import { WispError } from "./errors.js";

const abortReason = (signal) => signal.reason ?? new DOMException("the call was aborted while it waited for the model", "AbortError");

class Queue {
  #held = false;
  #waiters = [];

  /**
   * Resolves to a `release()` function once the caller's turn has come; rejects with the signal's reason
   * when it is aborted before then, and at once with BUSY when `wait` is false and the turn is not free.
   */
  acquire({ signal, wait = true } = {}) {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (!this.#held) {
      this.#held = true;
      return Promise.resolve(this.#releaser());
    }
    if (wait === false) return Promise.reject(new WispError("BUSY", "the model is serving another call (wait: false was asked)"));
    return new Promise((resolve, reject) => {
      const waiter = { resolve, signal };
      waiter.onAbort = () => {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        reject(abortReason(signal));
      };
      signal?.addEventListener("abort", waiter.onAbort, { once: true });
      this.#waiters.push(waiter);
    });
  }

  /** Runs `fn` in the caller's turn. */
  async run(options, fn) {
    const release = await this.acquire(options);
    try {
      return await fn();
    } finally {
      release();
    }
  }

  #releaser() {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiters.shift();
      if (!next) {
        this.#held = false;
        return;
      }
      next.signal?.removeEventListener("abort", next.onAbort);
      next.resolve(this.#releaser());
    };
  }
}

const queues = new WeakMap();

/** The queue of a `Model` or `WorkerModel`, shared by every call and agent on it. */
export function queueOf(model) {
  let queue = queues.get(model);
  if (!queue) queues.set(model, (queue = new Queue()));
  return queue;
}
