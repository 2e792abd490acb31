//! What a graph takes and gives: names and static f32 shapes, read from the ONNX model before any GPU work.

use protobuf::ProtobufEnum;
use wonnx::onnx::{ModelProto, TensorProto_DataType, ValueInfoProto};

use crate::error::{Result, WispError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ElemType {
    F32,
    I64,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TensorSpec {
    pub name: String,
    pub dims: Vec<i64>,
    #[serde(rename = "type")]
    pub elem: ElemType,
}

impl TensorSpec {
    pub fn element_count(&self) -> usize {
        self.dims.iter().map(|&d| d as usize).product()
    }
}

/// The graph's inputs that the caller must feed (declared inputs that are not initializers).
pub fn graph_inputs(model: &ModelProto) -> Result<Vec<TensorSpec>> {
    let graph = model.get_graph();
    let initialized: std::collections::HashSet<&str> = graph
        .get_initializer()
        .iter()
        .map(|t| t.get_name())
        .collect();
    graph
        .get_input()
        .iter()
        .filter(|v| !initialized.contains(v.get_name()))
        .map(|v| static_shape(v, "input", &[ElemType::F32, ElemType::I64]))
        .collect()
}

pub fn graph_outputs(model: &ModelProto) -> Result<Vec<TensorSpec>> {
    let outputs = model.get_graph().get_output();
    if outputs.is_empty() {
        return Err(WispError::InvalidModel(
            "the graph declares no outputs".into(),
        ));
    }
    outputs
        .iter()
        .map(|v| static_shape(v, "output", &[ElemType::F32]))
        .collect()
}

fn static_shape(value: &ValueInfoProto, role: &str, allowed: &[ElemType]) -> Result<TensorSpec> {
    let name = value.get_name();
    let invalid = |why: String| WispError::InvalidModel(format!("{role} '{name}': {why}"));
    let tensor = value.get_field_type().get_tensor_type();
    let elem = match tensor.get_elem_type() {
        t if t == TensorProto_DataType::FLOAT.value() => Some(ElemType::F32),
        t if t == TensorProto_DataType::INT64.value() => Some(ElemType::I64),
        _ => None,
    }
    .filter(|e| allowed.contains(e))
    .ok_or_else(|| {
        invalid(format!(
            "element type {} is not supported here (allowed: {allowed:?})",
            tensor.get_elem_type()
        ))
    })?;
    let dims = tensor
        .get_shape()
        .get_dim()
        .iter()
        .map(|d| {
            if d.has_dim_value() && d.get_dim_value() > 0 {
                Ok(d.get_dim_value())
            } else {
                Err(invalid(
                    "every dimension must be a fixed positive size".into(),
                ))
            }
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(TensorSpec {
        name: name.to_string(),
        dims,
        elem,
    })
}
