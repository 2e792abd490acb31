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
    bash tools/build-pkg.sh
    ;;
  ask)
    shift
    bash tools/build-pkg.sh >&2
    exec node tools/ask.mjs "$@"
    ;;
  demo)
    bash tools/build-pkg.sh
    exec node tools/serve.mjs "${PORT:-8080}"
    ;;
  test)
    # Plain Node tests first (no build, under a second): the error catalogue checked across its copies.
    node --test tests/node/
    # With `threads`: the CPU tests then also run the threaded loops (tests/cpu_threads.rs and the
    # thread tests of src/backend/cpu need it).
    cargo test --quiet --features threads
    bash tools/fuzz.sh 10
    bash tools/build-pkg.sh
    # The kernels of the modules just built, in wasm (reuses their dependencies' builds).
    bash tools/wasm-kernel-tests.sh
    node --test --test-concurrency=1 tests/browser/
    ;;
  *)
    echo "usage: tools/dev.sh build|demo|test|ask" >&2
    exit 2
    ;;
esac
