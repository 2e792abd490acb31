#!/usr/bin/env bash
# The project's entry points (README):  npm run demo | npm test | npm run build | npm run ask -- "question"
# Each one first installs whatever is missing (tools/setup.sh), so a fresh Debian machine needs nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."
# Mesa warns on every Vulkan start without it.
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"

bash tools/setup.sh
case "${1:-}" in
  build)
    bash tools/build-pkg.sh --if-changed
    ;;
  ask)
    shift
    bash tools/build-pkg.sh --if-changed >&2
    exec node tools/ask.mjs "$@"
    ;;
  demo)
    bash tools/build-pkg.sh --if-changed
    exec node tools/serve.mjs "${PORT:-8080}"
    ;;
  test)
    # Each phase prints its time, so that a slow CI run shows where the minutes went, and returns its
    # command's status: inside a `&&` chain `set -e` does not stop at a failure, so a phase that only
    # ran the command would pass a failed one on as the status of its `echo`.
    phase() {
      local t=$SECONDS status=0
      "$@" || status=$?
      echo "npm test: ${*} took $((SECONDS - t)) s" >&2
      return "$status"
    }
    echo "npm test: tools/setup.sh took ${SECONDS} s" >&2
    # Plain Node tests first (no build, under a second): the error catalogue checked across its copies.
    phase node --test tests/node/
    # Two chains, one per core. This one: the package's build, then the browser tests that load it.
    # build-pkg.sh spends most of its time compiling our crate alone (one codegen unit), on one core.
    # The other: the fuzz targets (their own target dir), then the CPU kernels in wasm (they reuse the
    # package's main modules' dependency builds; cargo waits for them if needed, and they run while it
    # builds the threaded modules in their own target dir), then the native tests, with `threads` so
    # that they also run the threaded loops (tests/cpu_threads.rs and the thread tests of
    # src/backend/cpu). The side chain's output comes after the browser tests'; a failure in either
    # chain fails the run.
    side_log=$(mktemp)
    (phase bash tools/fuzz.sh 10 && phase bash tools/wasm-kernel-tests.sh &&
      phase cargo test --quiet --features threads) >"$side_log" 2>&1 &
    side=$!
    main_status=0
    { phase bash tools/build-pkg.sh && phase node --test --test-concurrency=1 tests/browser/; } ||
      main_status=$?
    side_status=0
    wait "$side" || side_status=$?
    cat "$side_log" >&2
    rm -f "$side_log"
    [ "$main_status" = 0 ] || { echo "npm test: the package's build or the browser tests failed ($main_status)" >&2; exit "$main_status"; }
    [ "$side_status" = 0 ] || { echo "npm test: the fuzz targets, the wasm kernel tests or the native tests failed ($side_status)" >&2; exit "$side_status"; }
    ;;
  *)
    echo "usage: tools/dev.sh build|demo|test|ask" >&2
    exit 2
    ;;
esac
