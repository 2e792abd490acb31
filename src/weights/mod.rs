//! Model weights read straight from the bytes the user hands us (a GGUF or safetensors file already in
//! memory), with no offline conversion step.
//!
//! [`Weights`] is the common surface the graph builder uses: tensor names, shapes and f32 values, plus the
//! GGUF metadata when there is some. Shapes are always **outermost first** (PyTorch / safetensors order),
//! so both formats agree: GGUF stores dims innermost first, and its reader reverses them.

pub mod gguf;
pub mod lora;
pub mod quant;
pub mod safetensors;

use crate::{Result, WispError};
use gguf::{GgufFile, Metadata};
use safetensors::SafetensorsFile;

/// A weights file of either format, borrowing from its bytes.
#[derive(Debug)]
pub enum Weights<'a> {
    Gguf(GgufFile<'a>),
    Safetensors(SafetensorsFile<'a>),
}

impl<'a> Weights<'a> {
    /// GGUF if the bytes start with its magic, safetensors otherwise.
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        if bytes.starts_with(b"GGUF") {
            GgufFile::parse(bytes).map(Weights::Gguf)
        } else {
            SafetensorsFile::parse(bytes)
                .map(Weights::Safetensors)
                .map_err(|e| match e {
                    WispError::InvalidWeights(m) => {
                        WispError::InvalidWeights(format!("not GGUF (no 'GGUF' magic), and {m}"))
                    }
                    other => other,
                })
        }
    }

    /// Tensor names: file order for GGUF, sorted for safetensors.
    pub fn tensor_names(&self) -> Vec<&str> {
        match self {
            Weights::Gguf(f) => f.tensors().iter().map(|t| t.name()).collect(),
            Weights::Safetensors(f) => f.names().iter().map(String::as_str).collect(),
        }
    }

    /// Outermost first: a Llama `token_embd.weight` / `embed_tokens.weight` is `[vocab, hidden]` in both
    /// formats.
    pub fn shape(&self, name: &str) -> Result<Vec<usize>> {
        match self {
            Weights::Gguf(f) => Ok(gguf_tensor(f, name)?.shape()),
            Weights::Safetensors(f) => f.shape(name),
        }
    }

    /// The tensor's values, dequantized if need be, row-major in [`Self::shape`] order.
    pub fn to_f32(&self, name: &str) -> Result<Vec<f32>> {
        match self {
            Weights::Gguf(f) => gguf_tensor(f, name)?.to_f32(),
            Weights::Safetensors(f) => f.to_f32(name),
        }
    }

    /// GGUF metadata (architecture, hyper-parameters, tokenizer); `None` for safetensors, whose
    /// configuration lives in a separate `config.json`.
    pub fn metadata(&self) -> Option<&Metadata<'a>> {
        match self {
            Weights::Gguf(f) => Some(f.metadata()),
            Weights::Safetensors(_) => None,
        }
    }
}

fn gguf_tensor<'f, 'a>(f: &'f GgufFile<'a>, name: &str) -> Result<&'f gguf::TensorInfo<'a>> {
    f.tensor(name)
        .ok_or_else(|| WispError::InvalidWeights(format!("GGUF file has no tensor '{name}'")))
}
