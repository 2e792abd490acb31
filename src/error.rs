//! The one error type of the crate. Every variant has a stable `code` that JavaScript sees as `error.code`.

use thiserror::Error;

use crate::agent::tools::ArgumentProblem;

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
    /// A buffer of the model does not fit the backend's limits (a GPU buffer, the CPU backend's cache);
    /// the message names both.
    #[error("model too large: {0}")]
    ModelTooLarge(String),
    /// The weights file is not one we can read: wrong magic, unknown version, truncated or corrupt
    /// (a count, size or offset that does not fit the bytes), or a tensor or metadata key it lacks.
    #[error("invalid weights file: {0}")]
    InvalidWeights(String),
    /// A LoRA adapter that does not fit its base model: not a GGUF LoRA adapter, another architecture, a
    /// tensor that names no weight of the model, a missing half, a wrong shape or a bad alpha. The message
    /// names the tensor or key.
    #[error("invalid adapter: {0}")]
    InvalidAdapter(String),
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
    /// A tool registration was refused: a bad name, or parameters that are not an object JSON Schema.
    #[error("invalid tool: {0}")]
    InvalidTool(String),
    /// A tool with this name is already registered.
    #[error("a tool named '{0}' is already registered")]
    DuplicateTool(String),
    /// No tool with this name is registered (the model may invent names).
    #[error("no tool named '{0}' is registered")]
    UnknownTool(String),
    /// The registered tools cannot be turned into a decoding grammar (a parameter schema llguidance does not
    /// support), or the grammar failed while decoding.
    #[error("tool-call grammar: {0}")]
    ToolGrammar(String),
    /// A `response_format` whose schema is not a JSON Schema object or cannot be turned into a decoding
    /// grammar (a keyword llguidance does not support, look-around in a `pattern`, an unsatisfiable
    /// schema), or whose grammar failed while decoding.
    #[error("response format: {0}")]
    ResponseFormat(String),
    /// A tool call's arguments do not satisfy the tool's parameter schema. The message lists every
    /// problem with its JSON Pointer, so it can be handed back to the model as is.
    #[error(
        "arguments for tool '{tool}' do not match its parameters: {}",
        list_problems(problems)
    )]
    InvalidToolArguments {
        tool: String,
        problems: Vec<ArgumentProblem>,
    },
    /// A failure that no input explains and no other code fits (a result that cannot be converted for
    /// JavaScript, a step without logits): a bug in Wisp, whatever the backend.
    #[error("internal error (a bug in Wisp, please report it): {0}")]
    Internal(String),
}

/// One problem per clause, the root written as `(root)` since its JSON Pointer is the empty string.
fn list_problems(problems: &[ArgumentProblem]) -> String {
    let clauses: Vec<String> = problems
        .iter()
        .map(|p| {
            let path = if p.path.is_empty() {
                "(root)"
            } else {
                p.path.as_str()
            };
            format!("{path}: {}", p.message)
        })
        .collect();
    clauses.join("; ")
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
            WispError::ModelTooLarge(_) => "MODEL_TOO_LARGE",
            WispError::Busy(_) => "BUSY",
            WispError::InvalidManifest(_) => "INVALID_MANIFEST",
            WispError::InvalidWeights(_) => "INVALID_WEIGHTS",
            WispError::UnsupportedWeights(_) => "UNSUPPORTED_WEIGHTS",
            WispError::InvalidAdapter(_) => "INVALID_ADAPTER",
            WispError::InvalidRequest(_) => "INVALID_REQUEST",
            WispError::AllTokensMasked(_) => "ALL_TOKENS_MASKED",
            WispError::InvalidTool(_) => "INVALID_TOOL",
            WispError::DuplicateTool(_) => "DUPLICATE_TOOL",
            WispError::UnknownTool(_) => "UNKNOWN_TOOL",
            WispError::ToolGrammar(_) => "TOOL_GRAMMAR",
            WispError::ResponseFormat(_) => "RESPONSE_FORMAT",
            WispError::InvalidToolArguments { .. } => "INVALID_TOOL_ARGUMENTS",
            WispError::Internal(_) => "INTERNAL",
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
            WispError::ModelTooLarge("x".into()),
            WispError::Busy("x".into()),
            WispError::InvalidManifest("x".into()),
            WispError::InvalidWeights("x".into()),
            WispError::UnsupportedWeights("x".into()),
            WispError::InvalidAdapter("x".into()),
            WispError::InvalidRequest("x".into()),
            WispError::AllTokensMasked("x".into()),
            WispError::InvalidTool("x".into()),
            WispError::DuplicateTool("x".into()),
            WispError::UnknownTool("x".into()),
            WispError::ToolGrammar("x".into()),
            WispError::ResponseFormat("x".into()),
            WispError::InvalidToolArguments {
                tool: "x".into(),
                problems: Vec::new(),
            },
            WispError::Internal("x".into()),
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
        assert_eq!(
            WispError::DuplicateTool("search".into()).code(),
            "DUPLICATE_TOOL"
        );
        let bad_arguments = WispError::InvalidToolArguments {
            tool: "search".into(),
            problems: vec![
                ArgumentProblem {
                    path: String::new(),
                    message: "\"q\" is a required property".into(),
                },
                ArgumentProblem {
                    path: "/limit".into(),
                    message: "\"ten\" is not of type \"integer\"".into(),
                },
            ],
        };
        assert_eq!(bad_arguments.code(), "INVALID_TOOL_ARGUMENTS");
        assert_eq!(
            bad_arguments.to_string(),
            "arguments for tool 'search' do not match its parameters: (root): \"q\" is a required property; \
             /limit: \"ten\" is not of type \"integer\""
        );
    }
}
