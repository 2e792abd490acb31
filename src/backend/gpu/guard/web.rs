//! The browser side of the guard: binds `gpu_guard.js`, which watches the device wonnx creates.

use std::collections::HashMap;

use wasm_bindgen::prelude::*;
use wonnx::onnx::ModelProto;
use wonnx::utils::{InputTensor, OutputTensor};

use super::{from_wonnx, AdapterInfo};
use crate::error::{Result, WispError};

#[wasm_bindgen(module = "/src/backend/gpu/guard/gpu_guard.js")]
extern "C" {
    #[wasm_bindgen(js_name = probe)]
    async fn js_probe() -> JsValue;
    #[wasm_bindgen(js_name = beginCapture)]
    async fn begin_capture() -> JsValue;
    #[wasm_bindgen(js_name = endCapture)]
    fn end_capture(id: u32) -> JsValue;
    #[wasm_bindgen(js_name = check)]
    async fn js_check(id: u32) -> JsValue;
    #[wasm_bindgen(js_name = release)]
    fn js_release(id: u32);
    #[wasm_bindgen(js_name = loseDevice)]
    fn js_lose_device(id: u32);
    #[wasm_bindgen(js_name = resources)]
    fn js_resources() -> JsValue;
}

/// `{ devices, buffers, bytes }`: the GPU devices Wisp holds and their live buffers (see `gpu_guard.js`).
pub fn resources() -> JsValue {
    js_resources()
}

fn adapter_from_js(value: JsValue) -> Result<AdapterInfo> {
    if let Some(reason) = value.as_string() {
        return Err(WispError::GpuUnavailable(reason));
    }
    serde_wasm_bindgen::from_value(value)
        .map_err(|e| WispError::GpuInternal(format!("unexpected adapter description: {e}")))
}

pub async fn probe() -> Result<AdapterInfo> {
    adapter_from_js(js_probe().await)
}

#[derive(serde::Deserialize)]
struct Problem {
    kind: String,
    message: String,
}

pub struct DeviceGuard {
    id: u32,
    adapter: AdapterInfo,
}

impl DeviceGuard {
    pub async fn create_session(model: ModelProto) -> Result<(wonnx::Session, DeviceGuard)> {
        // wonnx panics (a trap in wasm) when there is no adapter: find out first.
        probe().await?;
        let id = begin_capture()
            .await
            .as_f64()
            .ok_or_else(|| WispError::GpuInternal("the GPU guard gave no capture id".into()))?
            as u32;
        let created = wonnx::Session::from_model(model).await;
        let adapter = end_capture(id);
        if adapter.is_null() {
            js_release(id);
            return Err(WispError::GpuInternal("wonnx created no GPU device".into()));
        }
        let guard = DeviceGuard {
            id,
            adapter: adapter_from_js(adapter)?,
        };
        let session = created.map_err(from_wonnx)?;
        guard.check().await?;
        Ok((session, guard))
    }

    pub fn adapter(&self) -> &AdapterInfo {
        &self.adapter
    }

    pub async fn run(
        &self,
        session: &wonnx::Session,
        feeds: &HashMap<String, InputTensor<'_>>,
    ) -> Result<HashMap<String, OutputTensor>> {
        let result = session.run(feeds).await;
        // What the GPU reported explains a wonnx failure better than wonnx does, and a wonnx
        // "success" is worthless when the GPU reported anything.
        self.check().await?;
        result.map_err(from_wonnx)
    }

    /// Destroys the device, as a driver reset would; the session then fails with `GPU_DEVICE_LOST`.
    pub fn lose_device(&self) {
        js_lose_device(self.id);
    }

    async fn check(&self) -> Result<()> {
        let value = js_check(self.id).await;
        if value.is_null() {
            return Ok(());
        }
        let problem: Problem = serde_wasm_bindgen::from_value(value)
            .map_err(|e| WispError::GpuInternal(format!("unexpected GPU guard report: {e}")))?;
        Err(match problem.kind.as_str() {
            "shader" => WispError::GpuShaderCompile(problem.message),
            "validation" => WispError::GpuValidation(problem.message),
            "out_of_memory" => WispError::GpuOutOfMemory(problem.message),
            "device_lost" => WispError::GpuDeviceLost(problem.message),
            _ => WispError::GpuInternal(problem.message),
        })
    }
}

impl Drop for DeviceGuard {
    fn drop(&mut self) {
        js_release(self.id);
    }
}
