#!/usr/bin/env bash
# The CPU kernels' tests (src/backend/cpu/kernel_tests.rs) compiled for wasm32 and run in Node by
# wasm-bindgen-test-runner: the simd128 kernels, then the relaxed-SIMD ones (Node 20's V8 runs them behind
# --experimental-wasm-relaxed-simd), each against the f64 references. Natively `cargo test` runs the
# portable kernels; only this runs the ones the package ships, at the package's optimization level.
# Release builds in tools/build-pkg.sh's target dir, with its flags: they reuse its dependency builds, so
# only our crate compiles (about 30 s each on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
export NODE_ARGS=--experimental-wasm-relaxed-simd
filter=kernel_tests

echo "wasm kernel tests: simd128"
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
  cargo test --release --lib --target wasm32-unknown-unknown -- "$filter"

# `cargo test` cannot give our crate alone a target feature; `cargo rustc --profile bench` builds the same
# release test binary with it (build-pkg.sh's relaxed flags), which the runner then runs.
echo "wasm kernel tests: relaxed-simd"
binary=$(cargo rustc --profile bench --lib --target wasm32-unknown-unknown --features relaxed-simd \
  --message-format=json-render-diagnostics -- -C target-feature=+relaxed-simd |
  node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
    for (const line of s.split("\n").filter(Boolean)) {
      const m = JSON.parse(line);
      if (m.reason === "compiler-artifact" && m.profile.test && m.executable) console.log(m.executable);
    }
  })')
[ -n "$binary" ] || { echo "wasm kernel tests: no relaxed-SIMD test binary" >&2; exit 1; }
wasm-bindgen-test-runner "$binary" "$filter"
