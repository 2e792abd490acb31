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
    # Each phase prints its time, so that a slow CI run shows where the minutes went.
    phase() {
      local t=$SECONDS
      "$@"
      echo "npm test: ${*} took $((SECONDS - t)) s" >&2
    }
    echo "npm test: tools/setup.sh took ${SECONDS} s" >&2
    # Plain Node tests first (no build, under a second): the error catalogue checked across its copies.
    phase node --test tests/node/
    # With `threads`: the CPU tests then also run the threaded loops (tests/cpu_threads.rs and the
    # thread tests of src/backend/cpu need it).
    phase cargo test --quiet --features threads
    # Beside the package's build, on the other core: the fuzz targets, then the CPU kernels in wasm.
    # build-pkg.sh spends most of its time compiling our crate alone (one codegen unit), on one core. The
    # kernel tests reuse its main modules' dependency builds (cargo waits for them if needed) and run
    # while it builds the threaded modules in their own target dir. Their output comes after the
    # package's; a failure stops the run like any phase's.
    side_log=$(mktemp)
    (phase bash tools/fuzz.sh 10 && phase bash tools/wasm-kernel-tests.sh) >"$side_log" 2>&1 &
    side=$!
    phase bash tools/build-pkg.sh
    side_status=0
    wait "$side" || side_status=$?
    cat "$side_log" >&2
    rm -f "$side_log"
    [ "$side_status" = 0 ] || { echo "npm test: the fuzz targets or the wasm kernel tests failed ($side_status)" >&2; exit "$side_status"; }
    phase node --test --test-concurrency=1 tests/browser/
    ;;
  *)
    echo "usage: tools/dev.sh build|demo|test|ask" >&2
    exit 2
    ;;
esac
