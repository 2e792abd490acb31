//! Creates wonnx sessions and runs them so that no GPU failure passes silently.
//!
//! On the web, wonnx never listens for WebGPU errors (a rejected shader yields zeros); `web.rs` watches the
//! device through `gpu_guard.js`. Natively, wgpu reports through its own error handler (see `native.rs`).

#[cfg(not(target_arch = "wasm32"))]
mod native;
#[cfg(target_arch = "wasm32")]
mod web;

#[cfg(not(target_arch = "wasm32"))]
pub use native::{probe, DeviceGuard};
#[cfg(target_arch = "wasm32")]
pub use web::{probe, resources, DeviceGuard};

use serde::{Deserialize, Serialize};
use wonnx::SessionError;

use crate::error::WispError;

/// The GPU adapter a session runs on, as the platform describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdapterInfo {
    pub vendor: String,
    pub architecture: String,
    pub device: String,
    pub description: String,
    /// A software or fallback adapter (SwiftShader, lavapipe): slow, but correct.
    pub is_fallback_adapter: bool,
    pub max_storage_buffer_binding_size: u64,
    pub max_buffer_size: u64,
}

/// Maps a wonnx error to ours: problems of the model itself are `INVALID_MODEL`, the rest are GPU errors.
fn from_wonnx(error: SessionError) -> WispError {
    match error {
        SessionError::InvalidInput(name) => {
            WispError::InvalidInput(format!("the model has no input '{name}'"))
        }
        SessionError::GpuError(wonnx::GpuError::InferenceInputMissing(name)) => {
            WispError::InvalidInput(format!("input '{name}' is missing"))
        }
        SessionError::GpuError(wonnx::GpuError::CompileError {
            node,
            error: wonnx::CompileError::ComputeLimitExceeded(what, needed, limit),
        }) => WispError::ModelTooLarge(format!(
            "node '{node}' needs {needed} {what} in one dispatch; the GPU allows {limit} \
             (maxComputeWorkgroupsPerDimension): use a smaller context or chunk"
        )),
        SessionError::GpuError(wonnx::GpuError::BufferAsyncError(e)) => {
            WispError::GpuInternal(format!("reading a GPU buffer back failed: {e}"))
        }
        other => WispError::InvalidModel(format!("wonnx cannot run this graph: {other}")),
    }
}
