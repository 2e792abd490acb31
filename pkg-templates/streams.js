// The stream-with-result shape of `model.stream`, `agent.stream` and a WorkerModel's `stream`: an async
// iterator of deltas or events, and `.result`, a promise of the whole outcome.

/**
 * Runs `run(done, fail)`, an async generator that calls `done(value)` once it has the outcome (or
 * `fail(error)`), as `{ [Symbol.asyncIterator], result }`. `result` resolves with the first `done`,
 * rejects with the generator's error, and rejects with an AbortError saying `leftEarly` when the caller
 * leaves the loop before either (the generator's own `finally` may settle it first, as `done` or `fail`).
 * Only the first settlement counts; a caller that only iterates sees no unhandled rejection.
 */
export function streamWithResult(run, leftEarly = "the stream was left before it finished") {
  let settle;
  const result = new Promise((resolve, reject) => (settle = { resolve, reject }));
  result.catch(() => {});
  let settled = false;
  const done = (value) => {
    if (!settled) (settled = true), settle.resolve(value);
  };
  const fail = (error) => {
    if (!settled) (settled = true), settle.reject(error);
  };
  async function* events() {
    try {
      yield* run(done, fail);
    } catch (e) {
      fail(e);
      throw e;
    } finally {
      fail(new DOMException(leftEarly, "AbortError"));
    }
  }
  const iterator = events();
  return { [Symbol.asyncIterator]: () => iterator, result };
}
