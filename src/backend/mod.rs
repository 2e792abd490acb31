//! Where the decoder's math runs, behind one `Decoder`: ONNX graphs on WebGPU through wonnx (`gpu`, with
//! the `webgpu` feature), or the CPU kernels (`cpu`). Each backend owns its decoder (cache, positions,
//! chunked passes); `decoder.rs` is the enum the rest of the crate drives.

pub mod cpu;
mod decoder;
#[cfg(feature = "webgpu")]
mod gpu;
mod snapshot;

pub use decoder::{BackendKind, Decoder, DraftPolicy, Rows, MAX_CPU_CACHE_BYTES};
#[cfg(all(feature = "webgpu", target_arch = "wasm32"))]
pub use gpu::gpu_resources;
#[cfg(feature = "webgpu")]
pub use gpu::{
    adapter_info, check_limits, AdapterInfo, ElemType, Feed, GpuDecoder, GraphSession, Tensor,
    TensorSpec,
};
