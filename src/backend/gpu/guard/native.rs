//! The native side of the guard (tests, command-line tools): wgpu reports GPU errors itself.

use std::collections::HashMap;

use wonnx::onnx::ModelProto;
use wonnx::utils::{InputTensor, OutputTensor};

use super::{from_wonnx, AdapterInfo};
use crate::error::{Result, WispError};

pub async fn probe() -> Result<AdapterInfo> {
    // The same choice wonnx makes: the primary backends, honouring WGPU_BACKEND / WGPU_ADAPTER_NAME.
    let backends = wgpu::util::backend_bits_from_env().unwrap_or(wgpu::Backends::PRIMARY);
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends,
        dx12_shader_compiler: wgpu::Dx12Compiler::Fxc,
    });
    let adapter = wgpu::util::initialize_adapter_from_env_or_default(&instance, backends, None)
        .await
        .ok_or_else(|| {
            WispError::GpuUnavailable(format!(
                "no GPU adapter for backends {backends:?} (for a CPU adapter install Mesa's lavapipe)"
            ))
        })?;
    let info = adapter.get_info();
    let limits = adapter.limits();
    Ok(AdapterInfo {
        vendor: format!("{:#06x}", info.vendor),
        architecture: info.driver_info,
        device: format!(
            "{} ({:?}, {:?})",
            info.driver, info.device_type, info.backend
        ),
        description: info.name,
        is_fallback_adapter: info.device_type == wgpu::DeviceType::Cpu,
        max_storage_buffer_binding_size: u64::from(limits.max_storage_buffer_binding_size),
        max_buffer_size: limits.max_buffer_size,
    })
}

pub struct DeviceGuard {
    adapter: AdapterInfo,
}

impl DeviceGuard {
    pub async fn create_session(model: ModelProto) -> Result<(wonnx::Session, DeviceGuard)> {
        // wonnx panics when there is no adapter: find out first.
        let adapter = probe().await?;
        let session = wonnx::Session::from_model(model)
            .await
            .map_err(from_wonnx)?;
        Ok((session, DeviceGuard { adapter }))
    }

    pub fn adapter(&self) -> &AdapterInfo {
        &self.adapter
    }

    pub async fn run(
        &self,
        session: &wonnx::Session,
        feeds: &HashMap<String, InputTensor<'_>>,
    ) -> Result<HashMap<String, OutputTensor>> {
        session.run(feeds).await.map_err(from_wonnx)
    }
}
