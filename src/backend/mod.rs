//! Where the decoder's math runs: ONNX graphs on WebGPU through wonnx (`gpu`, with the `webgpu` feature),
//! or the CPU kernels (`cpu`).

pub mod cpu;
#[cfg(feature = "webgpu")]
mod gpu;
#[cfg(feature = "webgpu")]
mod guard;
#[cfg(feature = "webgpu")]
mod spec;

#[cfg(feature = "webgpu")]
pub use gpu::{adapter_info, Feed, GraphSession, Tensor};
#[cfg(all(feature = "webgpu", target_arch = "wasm32"))]
pub use guard::resources as gpu_resources;
#[cfg(feature = "webgpu")]
pub use guard::AdapterInfo;
#[cfg(feature = "webgpu")]
pub use spec::{ElemType, TensorSpec};
