//! Model weights read straight from the bytes the user hands us (a GGUF or safetensors file), with no
//! offline conversion step.
//!
//! The file need not be in our memory: [`FileBytes::Outside`] is a file that a page holds (a JS
//! `Uint8Array`), read a range at a time (the CPU backend reads a tensor a band of rows at a time), so
//! that a load holds the weights in their kernel layouts plus one band, never the whole file beside them
//! (wasm memory never shrinks: a whole copy would stay for the model's life). Only a file's header is
//! read in one piece; a safetensors tensor is read whole when it is converted (its f32 values are four
//! or two times its bytes anyway).
//!
//! [`Weights`] is the common surface the graph builder uses: tensor names, shapes and f32 values, plus the
//! GGUF metadata when there is some. Shapes are always **outermost first** (PyTorch / safetensors order),
//! so both formats agree: GGUF stores dims innermost first, and its reader reverses them.

pub mod gguf;
pub mod lora;
pub mod quant;
pub mod safetensors;
#[cfg(test)]
pub(crate) mod test_outside;

use std::borrow::Cow;
use std::fmt::Debug;
use std::ops::Range;

use crate::{Result, WispError};
use gguf::{GgufFile, Metadata};
use safetensors::SafetensorsFile;

/// A file held outside our memory, read a range at a time.
pub trait ByteSource: Debug + MaybeSync {
    fn len(&self) -> usize;
    /// The bytes in `range`, which the caller has checked lies inside the file.
    fn read(&self, range: Range<usize>) -> Result<Vec<u8>>;
}

/// `Sync` natively, where the CPU backend's threads may share a model's weights as they are built; nothing
/// on wasm32, where the file outside is a JS object that stays on its thread.
#[cfg(not(target_arch = "wasm32"))]
pub trait MaybeSync: Sync {}
#[cfg(not(target_arch = "wasm32"))]
impl<T: Sync + ?Sized> MaybeSync for T {}
#[cfg(target_arch = "wasm32")]
pub trait MaybeSync {}
#[cfg(target_arch = "wasm32")]
impl<T: ?Sized> MaybeSync for T {}

/// A weights file's bytes: in memory (borrowed, never copied), or outside it.
#[derive(Clone, Copy)]
pub enum FileBytes<'a> {
    Memory(&'a [u8]),
    Outside(&'a dyn ByteSource),
}

impl Debug for FileBytes<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let place = match self {
            FileBytes::Memory(_) => "in memory",
            FileBytes::Outside(_) => "outside",
        };
        write!(f, "{} bytes {place}", self.len())
    }
}

/// The first read of a GGUF header; it doubles until the header parses (a Llama 3 vocabulary takes
/// about 8 MiB of metadata).
const HEADER_READ: usize = 4 << 20;

impl<'a> FileBytes<'a> {
    pub fn len(&self) -> usize {
        match self {
            FileBytes::Memory(b) => b.len(),
            FileBytes::Outside(s) => s.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes `range`, checked to lie inside the file.
    pub fn read(&self, range: Range<usize>) -> Result<Cow<'a, [u8]>> {
        let len = self.len();
        if range.start > range.end || range.end > len {
            return Err(WispError::InvalidWeights(format!(
                "bytes {range:?} lie outside the {len}-byte file"
            )));
        }
        match *self {
            FileBytes::Memory(b) => Ok(Cow::Borrowed(&b[range])),
            FileBytes::Outside(s) => s.read(range).map(Cow::Owned),
        }
    }

    /// The bytes [`Weights::open`] parses: a GGUF file's header (metadata and tensor infos), or a
    /// safetensors file's length field and JSON header. A file in memory is borrowed whole.
    pub fn header(&self) -> Result<Cow<'a, [u8]>> {
        let len = self.len();
        if let FileBytes::Memory(b) = *self {
            return Ok(Cow::Borrowed(b));
        }
        let first = self.read(0..8.min(len))?;
        if !first.starts_with(b"GGUF") {
            return self.read(0..safetensors::header_len(&first, len));
        }
        let mut header = self.read(0..HEADER_READ.min(len))?.into_owned();
        // A header cut short fails to parse (INVALID_WEIGHTS); such a failure is retried with more bytes
        // until the whole file is read, so that the error the user sees is the one of the whole file.
        loop {
            let parsed = GgufFile::open(&header, *self).map(|_| ());
            match parsed {
                Err(WispError::InvalidWeights(_)) if header.len() < len => {
                    let more = (header.len() * 2).min(len);
                    header.extend_from_slice(&self.read(header.len()..more)?);
                }
                Err(e) => return Err(e),
                Ok(_) => return Ok(Cow::Owned(header)),
            }
        }
    }
}

/// A weights file of either format: its header parsed, its tensors read when asked for.
#[derive(Debug)]
pub enum Weights<'a> {
    Gguf(GgufFile<'a>),
    Safetensors(SafetensorsFile<'a>),
}

impl<'a> Weights<'a> {
    /// A file in memory: GGUF if the bytes start with its magic, safetensors otherwise.
    pub fn parse(bytes: &'a [u8]) -> Result<Self> {
        Self::open(bytes, FileBytes::Memory(bytes))
    }

    /// `file`, with `header` from [`FileBytes::header`].
    pub fn open(header: &'a [u8], file: FileBytes<'a>) -> Result<Self> {
        if header.starts_with(b"GGUF") {
            GgufFile::open(header, file).map(Weights::Gguf)
        } else {
            SafetensorsFile::open(header, file)
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
