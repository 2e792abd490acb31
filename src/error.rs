//! The one error type of the crate. Every variant has a stable `code` that JavaScript sees as `error.code`.

use thiserror::Error;

pub type Result<T, E = WispError> = std::result::Result<T, E>;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum WispError {
    /// The platform offers no usable GPU adapter (no `navigator.gpu`, or no adapter from it).
    #[error("WebGPU is not available: {0}")]
    GpuUnavailable(String),
    /// A WGSL shader was rejected by the platform's shader compiler.
    #[error("the GPU rejected a shader: {0}")]
    GpuShaderCompile(String),
    /// The GPU reported a validation error (an invalid pipeline, buffer or command).
    #[error("the GPU reported a validation error: {0}")]
    GpuValidation(String),
    #[error("the GPU ran out of memory: {0}")]
    GpuOutOfMemory(String),
    /// The device was lost (driver reset, `device.destroy()`, tab in the background too long...).
    /// The session cannot be used any more; load the model again.
    #[error("the GPU device was lost ({0}); load the model again")]
    GpuDeviceLost(String),
    /// Anything else the GPU layer reported.
    #[error("GPU error: {0}")]
    GpuInternal(String),
    /// The model bytes are not a graph we can run (not ONNX, unsupported op or shape, ...).
    #[error("invalid model: {0}")]
    InvalidModel(String),
    /// The caller's inputs do not fit the model (unknown name, missing input, wrong element count).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A bundle manifest that is malformed, has missing or unknown fields, or unsafe paths.
    #[error("invalid bundle manifest: {0}")]
    InvalidManifest(String),
    /// The object is in use by a call that has not finished (calls on one model run one at a time).
    #[error("busy: {0}")]
    Busy(String),
    /// More tokens than the cache holds.
    #[error("context overflow: {0}")]
    ContextOverflow(String),
    /// The weights file is not one we can read: wrong magic, unknown version, truncated or corrupt
    /// (a count, size or offset that does not fit the bytes), or a tensor or metadata key it lacks.
    #[error("invalid weights file: {0}")]
    InvalidWeights(String),
    /// The weights file is well formed but holds something this reader cannot convert yet
    /// (a quantization or dtype we do not decode).
    #[error("unsupported weights: {0}")]
    UnsupportedWeights(String),
    /// A generation request carries a value outside its allowed range (a sampling parameter that is NaN,
    /// a negative temperature, an empty stop string, ...). The message names the field.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// Every token was masked (all logits -inf or NaN after the logits processors and penalties), so there
    /// is nothing to sample: typically a constraint that allows no continuation.
    #[error("no token can be sampled: {0}")]
    AllTokensMasked(String),
}

impl WispError {
    /// Stable, documented identifiers: JavaScript code may branch on these.
    pub fn code(&self) -> &'static str {
        match self {
            WispError::GpuUnavailable(_) => "WEBGPU_UNAVAILABLE",
            WispError::GpuShaderCompile(_) => "GPU_SHADER_COMPILE",
            WispError::GpuValidation(_) => "GPU_VALIDATION",
            WispError::GpuOutOfMemory(_) => "GPU_OUT_OF_MEMORY",
            WispError::GpuDeviceLost(_) => "GPU_DEVICE_LOST",
            WispError::GpuInternal(_) => "GPU_INTERNAL",
            WispError::InvalidModel(_) => "INVALID_MODEL",
            WispError::InvalidInput(_) => "INVALID_INPUT",
            WispError::ContextOverflow(_) => "CONTEXT_OVERFLOW",
            WispError::Busy(_) => "BUSY",
            WispError::InvalidManifest(_) => "INVALID_MANIFEST",
            WispError::InvalidWeights(_) => "INVALID_WEIGHTS",
            WispError::UnsupportedWeights(_) => "UNSUPPORTED_WEIGHTS",
            WispError::InvalidRequest(_) => "INVALID_REQUEST",
            WispError::AllTokensMasked(_) => "ALL_TOKENS_MASKED",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_and_messages_name_the_problem() {
        let all = [
            WispError::GpuUnavailable("x".into()),
            WispError::GpuShaderCompile("x".into()),
            WispError::GpuValidation("x".into()),
            WispError::GpuOutOfMemory("x".into()),
            WispError::GpuDeviceLost("x".into()),
            WispError::GpuInternal("x".into()),
            WispError::InvalidModel("x".into()),
            WispError::InvalidInput("x".into()),
            WispError::ContextOverflow("x".into()),
            WispError::Busy("x".into()),
            WispError::InvalidManifest("x".into()),
            WispError::InvalidWeights("x".into()),
            WispError::UnsupportedWeights("x".into()),
            WispError::InvalidRequest("x".into()),
            WispError::AllTokensMasked("x".into()),
        ];
        let codes: std::collections::HashSet<_> = all.iter().map(WispError::code).collect();
        assert_eq!(codes.len(), all.len());
        assert_eq!(
            WispError::GpuShaderCompile("line 3: bad".into()).to_string(),
            "the GPU rejected a shader: line 3: bad"
        );
        assert_eq!(
            WispError::InvalidWeights("bad magic".into()).to_string(),
            "invalid weights file: bad magic"
        );
        assert_eq!(
            WispError::UnsupportedWeights("tensor 'w' has type Q2_K".into()).to_string(),
            "unsupported weights: tensor 'w' has type Q2_K"
        );
        assert_eq!(
            WispError::InvalidRequest("x".into()).code(),
            "INVALID_REQUEST"
        );
        assert_eq!(
            WispError::AllTokensMasked("x".into()).code(),
            "ALL_TOKENS_MASKED"
        );
    }
}
