//! The decoder on the CPU, in plain Rust: quantized weights stay quantized (decoded block by block inside
//! the dot products, against activations quantized to i16 per block), and the hot dot products have wasm SIMD versions (simd128)
//! next to portable ones that LLVM vectorizes natively.

mod activations;
mod blocks;
mod decoder;
mod dot;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod dot_wasm;
mod layer;
mod matrix;
mod parallel;
mod weights;

pub use decoder::CpuDecoder;
pub use parallel::threads;

// The `relaxed-simd` feature names the build that has the target feature (Cargo.toml).
#[cfg(all(
    target_arch = "wasm32",
    feature = "relaxed-simd",
    not(target_feature = "relaxed-simd")
))]
compile_error!(
    "the `relaxed-simd` build needs `-C target-feature=+relaxed-simd` (tools/build-pkg.sh)"
);

/// The SIMD instructions this build's kernels use: the facade reports it as `backend.simd`.
pub const SIMD: &str = if cfg!(target_feature = "relaxed-simd") {
    "relaxed"
} else if cfg!(all(target_arch = "wasm32", target_feature = "simd128")) {
    "simd128"
} else {
    "native"
};

/// The dot products the matrices call: simd128 on wasm when enabled, portable otherwise.
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
use dot as kernels;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
use dot_wasm as kernels;

#[cfg(test)]
mod kernel_tests;
#[cfg(test)]
mod test_gguf;
#[cfg(test)]
mod test_rng;
#[cfg(all(test, feature = "threads"))]
mod thread_tests;
