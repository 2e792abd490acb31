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
    # The fuzz targets build beside the package: build-pkg.sh and the wasm kernel tests spend most of their
    # time compiling our crate alone (one codegen unit), on one core, and the fuzz build fills the other.
    # Its output comes after theirs; a failure stops the run like any phase's.
    fuzz_log=$(mktemp)
    phase bash tools/fuzz.sh 10 >"$fuzz_log" 2>&1 &
    fuzz=$!
    phase bash tools/build-pkg.sh
    # The kernels of the modules just built, in wasm (reuses their dependencies' builds).
    phase bash tools/wasm-kernel-tests.sh
    fuzz_status=0
    wait "$fuzz" || fuzz_status=$?
    cat "$fuzz_log" >&2
    rm -f "$fuzz_log"
    [ "$fuzz_status" = 0 ] || { echo "npm test: tools/fuzz.sh failed ($fuzz_status)" >&2; exit "$fuzz_status"; }
    phase node --test --test-concurrency=1 tests/browser/
    ;;
  *)
    echo "usage: tools/dev.sh build|demo|test|ask" >&2
    exit 2
    ;;
esac
