#!/usr/bin/env bash
# The CPU kernels' tests (src/backend/cpu/kernel_tests.rs) compiled for wasm32 and run in Node by
# wasm-bindgen-test-runner: the simd128 kernels, then the relaxed-SIMD ones (Node 20's V8 runs them behind
# --experimental-wasm-relaxed-simd), each against the f64 references. Natively `cargo test` runs the
# portable kernels; only this runs the ones the package ships, at the package's optimization level.
# Release test binaries in tools/build-pkg.sh's target dir, with its flags: they reuse its dependency
# builds, so only our crate compiles (about 1.5 minutes each on 2 cores). `cargo rustc --profile bench`
# builds what `cargo test --release` would, but can give our crate alone a target feature (relaxed SIMD).
set -euo pipefail
cd "$(dirname "$0")/.."
export NODE_ARGS=--experimental-wasm-relaxed-simd

# `run NAME [CARGO RUSTC ARGS...]`: builds the test binary, then runs its kernel tests.
run() {
  echo "wasm kernel tests: $1"
  shift
  local binary
  binary=$(cargo rustc --profile bench --lib --target wasm32-unknown-unknown \
    --message-format=json-render-diagnostics "$@" |
    node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
      for (const line of s.split("\n").filter(Boolean)) {
        const m = JSON.parse(line);
        if (m.reason === "compiler-artifact" && m.profile.test && m.executable) console.log(m.executable);
      }
    })')
  [ -n "$binary" ] || { echo "wasm kernel tests: no test binary" >&2; exit 1; }
  wasm-bindgen-test-runner "$binary" kernel_tests
}
run simd128
# build-pkg.sh's relaxed-SIMD flags.
run relaxed-simd --features relaxed-simd -- -C target-feature=+relaxed-simd
