#!/usr/bin/env bash
# The CPU kernels' tests (src/backend/cpu/kernel_tests.rs) compiled for wasm32 and run in Node by
# wasm-bindgen-test-runner: the simd128 kernels, then the relaxed-SIMD ones (Node 20's V8 runs them behind
# --experimental-wasm-relaxed-simd), each against the f64 references. Natively `cargo test` runs the
# portable kernels; only this runs the ones the package ships. The CPU backend alone (no WebGPU) keeps
# the build short.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner
export NODE_ARGS=--experimental-wasm-relaxed-simd
run() {
  echo "wasm kernel tests: $1"
  cargo test --lib --target wasm32-unknown-unknown --no-default-features --target-dir "target/$2" -- kernel_tests
}
run simd128 kernels-simd128
# RUSTFLAGS replaces .cargo/config.toml's flags, so it repeats them.
RUSTFLAGS="--cfg=web_sys_unstable_apis -C target-feature=+simd128,+relaxed-simd" run relaxed-simd kernels-relaxed
