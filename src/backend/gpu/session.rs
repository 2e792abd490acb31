//! Running ONNX graphs on the GPU through wonnx, with every GPU error surfaced as a [`WispError`].

use std::collections::HashMap;

use protobuf::Message;
use wonnx::onnx::ModelProto;
use wonnx::utils::{InputTensor, OutputTensor};

use super::guard::{self, AdapterInfo, DeviceGuard};
use super::spec::{self, ElemType, TensorSpec};

use crate::error::{Result, WispError};

/// A dense f32 tensor in row-major order.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    pub dims: Vec<i64>,
    pub data: Vec<f32>,
}

/// Describes the GPU adapter the platform offers, or fails with `WEBGPU_UNAVAILABLE`.
pub async fn adapter_info() -> Result<AdapterInfo> {
    guard::probe().await
}

/// Borrowed input data for one run.
#[derive(Debug, Clone, Copy)]
pub enum Feed<'a> {
    F32(&'a [f32]),
    I64(&'a [i64]),
}

impl Feed<'_> {
    fn len(&self) -> usize {
        match self {
            Feed::F32(d) => d.len(),
            Feed::I64(d) => d.len(),
        }
    }

    fn elem(&self) -> ElemType {
        match self {
            Feed::F32(_) => ElemType::F32,
            Feed::I64(_) => ElemType::I64,
        }
    }
}

/// A compiled graph bound to its own GPU device.
pub struct GraphSession {
    session: wonnx::Session,
    guard: DeviceGuard,
    inputs: Vec<TensorSpec>,
    outputs: Vec<TensorSpec>,
}

impl GraphSession {
    /// Parses and compiles an ONNX model. Fails with `INVALID_MODEL` before any GPU work when the model
    /// is not ONNX or not something wonnx can run, and with a GPU code when the GPU rejects it.
    pub async fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let model = ModelProto::parse_from_bytes(bytes)
            .map_err(|e| WispError::InvalidModel(format!("not an ONNX model: {e}")))?;
        Self::from_model(model).await
    }

    /// Compiles a model built in memory (the decoder graph), skipping serialization.
    pub async fn from_model(model: ModelProto) -> Result<Self> {
        let inputs = spec::graph_inputs(&model)?;
        let outputs = spec::graph_outputs(&model)?;
        let (session, guard) = DeviceGuard::create_session(model).await?;
        Ok(Self {
            session,
            guard,
            inputs,
            outputs,
        })
    }

    pub fn inputs(&self) -> &[TensorSpec] {
        &self.inputs
    }

    pub fn outputs(&self) -> &[TensorSpec] {
        &self.outputs
    }

    pub fn adapter(&self) -> &AdapterInfo {
        self.guard.adapter()
    }

    /// Destroys this session's GPU device, as a driver reset would (tests, and apps that exercise their
    /// reload path). Later runs fail with `GPU_DEVICE_LOST`.
    #[cfg(target_arch = "wasm32")]
    pub fn lose_device(&self) {
        self.guard.lose_device();
    }

    /// Runs the graph. Every declared input must be given, with exactly the declared element count.
    pub async fn run(&self, inputs: &HashMap<&str, Feed<'_>>) -> Result<HashMap<String, Tensor>> {
        for name in inputs.keys() {
            if !self.inputs.iter().any(|s| s.name == *name) {
                let known: Vec<_> = self.inputs.iter().map(|s| s.name.as_str()).collect();
                return Err(WispError::InvalidInput(format!(
                    "the model has no input '{name}' (its inputs: {})",
                    known.join(", ")
                )));
            }
        }
        let mut feeds = HashMap::with_capacity(self.inputs.len());
        for spec in &self.inputs {
            let data = inputs.get(spec.name.as_str()).ok_or_else(|| {
                WispError::InvalidInput(format!("input '{}' {:?} is missing", spec.name, spec.dims))
            })?;
            if data.elem() != spec.elem {
                return Err(WispError::InvalidInput(format!(
                    "input '{}' takes {:?} values, got {:?}",
                    spec.name,
                    spec.elem,
                    data.elem()
                )));
            }
            if data.len() != spec.element_count() {
                return Err(WispError::InvalidInput(format!(
                    "input '{}' needs {} values (shape {:?}), got {}",
                    spec.name,
                    spec.element_count(),
                    spec.dims,
                    data.len()
                )));
            }
            let tensor = match *data {
                Feed::F32(d) => InputTensor::F32(d.into()),
                Feed::I64(d) => InputTensor::I64(d.into()),
            };
            feeds.insert(spec.name.clone(), tensor);
        }
        let mut result = self.guard.run(&self.session, &feeds).await?;
        self.outputs
            .iter()
            .map(|spec| {
                let data = match result.remove(&spec.name) {
                    Some(OutputTensor::F32(v)) => v,
                    Some(_) => {
                        return Err(WispError::InvalidModel(format!(
                            "output '{}' is not f32",
                            spec.name
                        )))
                    }
                    None => {
                        return Err(WispError::GpuInternal(format!(
                            "wonnx returned no output '{}'",
                            spec.name
                        )))
                    }
                };
                Ok((
                    spec.name.clone(),
                    Tensor {
                        dims: spec.dims.clone(),
                        data,
                    },
                ))
            })
            .collect()
    }
}
