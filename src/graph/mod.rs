//! Builds the decoder graph that wonnx runs, from a model configuration and its weights.
//!
//! Standard ONNX exports of these models use ops and dynamic shapes wonnx 0.5.1 cannot run, so the graph
//! is written here with only ops verified on both lavapipe and Chromium: MatMul, Gather (axis 0),
//! ReduceMean/ReduceMax/ReduceSum (rank 2), Add, Sub, Mul, Div, Sqrt, Exp, Sigmoid, Concat (axis 0),
//! Transpose and Reshape. Softmax is built from those (wonnx's own is rejected by Chromium).

mod decoder;
mod onnx;

pub use decoder::{build_decoder, DecoderShape, WeightProvider};
