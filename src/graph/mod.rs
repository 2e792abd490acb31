//! Builds the decoder graph that wonnx runs, from a model configuration and its weights.
//!
//! Standard ONNX exports of these models use ops and dynamic shapes wonnx 0.5.1 cannot run, so the graph
//! is written here with only ops verified on both lavapipe and Chromium: MatMul, Gather (axis 0),
//! ReduceMean/ReduceMax/ReduceSum (rank 2), Add, Sub, Mul, Div, Sqrt, Exp, Sigmoid, Concat (axis 0),
//! Transpose and Reshape. Softmax is built from those (wonnx's own is rejected by Chromium).
//!
//! The builder comes with the `webgpu` feature; the weight source trait is shared with the CPU backend.

#[cfg(feature = "webgpu")]
mod builder;
#[cfg(feature = "webgpu")]
mod onnx;

#[cfg(feature = "webgpu")]
pub use builder::build_decoder;

use crate::error::{Result, WispError};

/// Static sizes of the graph: tokens per call and cached positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecoderShape {
    pub chunk_len: usize,
    pub cache_len: usize,
}

/// A graph's tokens per call: even and at least 2 (wonnx's stacked MatMul computes only column 0 when
/// M == 1, and its other kernels need even sizes).
pub fn check_chunk_len(chunk_len: usize) -> Result<()> {
    if chunk_len < 2 || chunk_len % 2 != 0 {
        return Err(WispError::InvalidRequest(format!(
            "chunk_len is {chunk_len}; it must be even and at least 2"
        )));
    }
    Ok(())
}

/// Where the builder gets weights: by Hugging Face tensor name, as f32 in Hugging Face's layout
/// (`[out, in]` for projections). `dims` is the shape the builder expects; a source must fail, naming the
/// tensor, when it has another.
pub trait WeightProvider {
    fn tensor(&mut self, name: &str, dims: &[usize]) -> Result<Vec<f32>>;
}
