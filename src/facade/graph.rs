//! `GraphSession`: any static-shape ONNX graph on the GPU.

use std::collections::HashMap;
use std::rc::Rc;

use js_sys::{Array, BigInt64Array, Float32Array, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::{to_js, to_js_value};
use crate::backend;
use crate::error::WispError;

/// An ONNX graph compiled for this page's GPU.
#[wasm_bindgen]
pub struct GraphSession {
    inner: Rc<backend::GraphSession>,
}

#[wasm_bindgen]
impl GraphSession {
    /// Parses and compiles ONNX model bytes.
    pub async fn create(bytes: Vec<u8>) -> Result<GraphSession, JsValue> {
        let inner = backend::GraphSession::from_bytes(&bytes)
            .await
            .map_err(to_js)?;
        Ok(GraphSession {
            inner: Rc::new(inner),
        })
    }

    /// `[{ name, dims }]` of the inputs a run needs.
    #[wasm_bindgen(getter)]
    pub fn inputs(&self) -> Result<JsValue, JsValue> {
        to_js_value(&self.inner.inputs())
    }

    #[wasm_bindgen(getter)]
    pub fn outputs(&self) -> Result<JsValue, JsValue> {
        to_js_value(&self.inner.outputs())
    }

    #[wasm_bindgen(getter)]
    pub fn adapter(&self) -> Result<JsValue, JsValue> {
        to_js_value(self.inner.adapter())
    }

    /// Runs the graph: `inputs` maps each input name to a `Float32Array` (or an array of numbers).
    /// Resolves to `{ [output]: { dims, data: Float32Array } }`.
    pub fn run(&self, inputs: Object) -> Promise {
        let inner = Rc::clone(&self.inner);
        let owned = read_inputs(&inputs, inner.inputs());
        future_to_promise(async move {
            let owned = owned.map_err(to_js)?;
            let feeds = owned
                .iter()
                .map(|(name, data)| {
                    let feed = match data {
                        Owned::F32(d) => backend::Feed::F32(d),
                        Owned::I64(d) => backend::Feed::I64(d),
                    };
                    (name.as_str(), feed)
                })
                .collect();
            let outputs = inner.run(&feeds).await.map_err(to_js)?;
            let result = Object::new();
            for (name, tensor) in outputs {
                let entry = Object::new();
                let dims: Array = tensor
                    .dims
                    .iter()
                    .map(|&d| JsValue::from(d as f64))
                    .collect();
                Reflect::set(&entry, &"dims".into(), &dims)?;
                Reflect::set(
                    &entry,
                    &"data".into(),
                    &Float32Array::from(tensor.data.as_slice()),
                )?;
                Reflect::set(&result, &name.into(), &entry)?;
            }
            Ok(result.into())
        })
    }

    /// Destroys the session's GPU device as a driver reset would; later runs reject with `GPU_DEVICE_LOST`.
    #[wasm_bindgen(js_name = loseDevice)]
    pub fn lose_device(&self) {
        self.inner.lose_device();
    }
}

enum Owned {
    F32(Vec<f32>),
    I64(Vec<i64>),
}

/// Copies the JS inputs out, typed as the graph declares them (f32 or i64).
fn read_inputs(
    inputs: &Object,
    specs: &[backend::TensorSpec],
) -> Result<HashMap<String, Owned>, WispError> {
    let mut feeds = HashMap::new();
    for entry in Object::entries(inputs).iter() {
        let pair = Array::from(&entry);
        let name = pair.get(0).as_string().unwrap_or_default();
        let value = pair.get(1);
        let elem = specs
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.elem)
            .unwrap_or(backend::ElemType::F32);
        let data = match elem {
            backend::ElemType::F32 if value.is_instance_of::<Float32Array>() => {
                Owned::F32(Float32Array::from(value).to_vec())
            }
            backend::ElemType::I64 if value.is_instance_of::<BigInt64Array>() => {
                Owned::I64(BigInt64Array::from(value).to_vec())
            }
            _ if Array::is_array(&value) => {
                let numbers = serde_wasm_bindgen::from_value::<Vec<f64>>(value).map_err(|e| {
                    WispError::InvalidInput(format!("input '{name}' must hold only numbers: {e}"))
                })?;
                match elem {
                    backend::ElemType::F32 => Owned::F32(numbers.iter().map(|&x| x as f32).collect()),
                    backend::ElemType::I64 => Owned::I64(numbers.iter().map(|&x| x as i64).collect()),
                }
            }
            _ => {
                return Err(WispError::InvalidInput(format!(
                    "input '{name}' must be a Float32Array (BigInt64Array for int64 inputs) or an array of numbers"
                )))
            }
        };
        feeds.insert(name, data);
    }
    Ok(feeds)
}
