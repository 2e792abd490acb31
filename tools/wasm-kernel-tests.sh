#!/usr/bin/env bash
# The CPU kernels' tests (src/backend/cpu/kernel_tests.rs) compiled for wasm32 and run in Node by
# wasm-bindgen-test-runner: the simd128 kernels, then the relaxed-SIMD ones (Node 20's V8 runs them behind
# --experimental-wasm-relaxed-simd), each against the f64 references. Natively `cargo test` runs the
# portable kernels; only this runs the ones the package ships, at the package's optimization level.
# Release builds in tools/build-pkg.sh's target dirs, with its flags: after a package build only the
# crate itself compiles again (about 2 minutes each on 2 cores, instead of every dependency).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner
export NODE_ARGS=--experimental-wasm-relaxed-simd
run() {
  echo "wasm kernel tests: $1"
  cargo test --release --lib --target wasm32-unknown-unknown --target-dir "$2" -- kernel_tests
}
run simd128 target
# RUSTFLAGS replaces .cargo/config.toml's flags, so it repeats them (as tools/build-pkg.sh does).
RUSTFLAGS="--cfg=web_sys_unstable_apis -C target-feature=+simd128,+relaxed-simd" run relaxed-simd target/relaxed
