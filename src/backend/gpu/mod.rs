//! The WebGPU backend: a wonnx session over the graph of `graph::builder` (`session.rs`), the decoder
//! that feeds it chunk by chunk and keeps the key/value cache (`decoder.rs`), the guard that turns GPU
//! failures into errors (`guard/`) and the graph's input and output specs (`spec.rs`).

mod decoder;
mod guard;
mod session;
mod spec;

pub use decoder::{check_limits, GpuDecoder};
#[cfg(target_arch = "wasm32")]
pub use guard::resources as gpu_resources;
pub use guard::AdapterInfo;
pub use session::{adapter_info, Feed, GraphSession, Tensor};
pub use spec::{ElemType, TensorSpec};
