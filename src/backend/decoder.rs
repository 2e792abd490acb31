//! The decoder a generation runs on: the wonnx graph on WebGPU, or the CPU kernels. Both keep the same
//! token history and key/value cache semantics, so generation, sampling and the agent do not care which.

use serde::{Deserialize, Serialize};

use super::cpu::CpuDecoder;
#[cfg(feature = "webgpu")]
use super::gpu::GpuDecoder;
use super::snapshot;
use crate::error::{Result, WispError};
use crate::generate::TokenHistory;
#[cfg(feature = "webgpu")]
use crate::graph::{DecoderShape, WeightProvider};
use crate::model::{ModelConfig, ModelWeights};
use crate::profile::Profile;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    Webgpu,
    Cpu,
}

/// See [`Decoder::draft_policy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DraftPolicy {
    pub max_len: usize,
    pub min_ngram: usize,
    /// Halve the draft length after a pass whose first draft failed, double it after one whose drafts
    /// all held.
    pub adaptive: bool,
}

/// The largest key/value cache the CPU backend takes: half of wasm32's 4 GiB address space, leaving room
/// for the weights and the page.
pub const MAX_CPU_CACHE_BYTES: u64 = 2 << 30;

/// The logits a pass returns, and the arithmetic its products keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    /// After every token, each as a one-token step gives it.
    Every,
    /// After the last token, as one-token steps give it.
    LastOfSteps,
    /// After the last token of a prompt, whose products may be grouped for speed (the CPU's tiles).
    LastOfPrompt,
}

pub enum Decoder {
    // Boxed: both are a few hundred bytes of handles and buffers; the enum is passed around by value.
    #[cfg(feature = "webgpu")]
    Gpu(Box<GpuDecoder>),
    Cpu(Box<CpuDecoder>),
}

macro_rules! each {
    ($self:expr, $d:ident => $e:expr) => {
        match $self {
            #[cfg(feature = "webgpu")]
            Decoder::Gpu($d) => $e,
            Decoder::Cpu($d) => $e,
        }
    };
}

impl Decoder {
    /// The wonnx graph on the GPU.
    #[cfg(feature = "webgpu")]
    pub async fn new(
        config: &ModelConfig,
        weights: &mut dyn WeightProvider,
        shape: DecoderShape,
    ) -> Result<Self> {
        Ok(Decoder::Gpu(Box::new(
            GpuDecoder::new(config, weights, shape).await?,
        )))
    }

    /// The CPU kernels (quantized weights stay quantized). A context whose key/value cache could not fit
    /// in memory is refused here (`MODEL_TOO_LARGE`), before anything is allocated: the cache grows with
    /// the tokens, and running out of memory mid-answer would abort the whole wasm instance.
    pub fn cpu(config: &ModelConfig, weights: &ModelWeights, context_len: usize) -> Result<Self> {
        // Keys and values of every layer, f32; in f64, where a hostile configuration cannot overflow it.
        let per_token = [
            2,
            config.num_layers,
            config.num_kv_heads,
            config.head_dim,
            4,
        ]
        .iter()
        .map(|&n| n as f64)
        .product::<f64>();
        let bytes = per_token * context_len as f64;
        if bytes > MAX_CPU_CACHE_BYTES as f64 {
            return Err(WispError::ModelTooLarge(format!(
                "a context of {context_len} tokens needs a key/value cache of {:.0} MiB; the CPU \
                 backend holds at most {} MiB: use a smaller contextLen",
                bytes / f64::from(1 << 20),
                MAX_CPU_CACHE_BYTES >> 20
            )));
        }
        Ok(Decoder::Cpu(Box::new(CpuDecoder::new(
            config,
            weights,
            context_len,
        )?)))
    }

    /// Destroys the GPU device as a driver reset would (see `GraphSession::lose_device`); false on the
    /// CPU, which has no device to lose.
    #[cfg(target_arch = "wasm32")]
    pub fn lose_device(&self) -> bool {
        match self {
            #[cfg(feature = "webgpu")]
            Decoder::Gpu(d) => {
                d.lose_device();
                true
            }
            Decoder::Cpu(_) => false,
        }
    }

    pub fn kind(&self) -> BackendKind {
        match self {
            #[cfg(feature = "webgpu")]
            Decoder::Gpu(_) => BackendKind::Webgpu,
            Decoder::Cpu(_) => BackendKind::Cpu,
        }
    }

    fn history(&self) -> &TokenHistory {
        each!(self, d => d.history())
    }

    fn history_mut(&mut self) -> &mut TokenHistory {
        each!(self, d => d.history_mut())
    }

    /// Time per stage since the last reset.
    pub fn profile_mut(&mut self) -> &mut Profile {
        each!(self, d => d.profile_mut())
    }

    /// Tokens in the cache: the position the next token gets.
    pub fn len(&self) -> usize {
        self.history().len()
    }

    pub fn is_empty(&self) -> bool {
        self.history().is_empty()
    }

    pub fn capacity(&self) -> usize {
        self.history().capacity()
    }

    /// The cached tokens.
    pub fn tokens(&self) -> &[u32] {
        self.history().tokens()
    }

    /// Prefix reuse: see [`TokenHistory::reuse_prefix`].
    pub fn reuse_prefix(&mut self, ids: &[u32]) -> usize {
        self.history_mut().reuse_prefix(ids)
    }

    /// Drops every cached token from `pos` on.
    pub fn seek(&mut self, pos: usize) -> Result<()> {
        self.history_mut().seek(pos)
    }

    /// What this decoder's cache bytes say they are (`tokens` aside).
    fn snapshot_header(&self, tokens: usize) -> snapshot::Header {
        let config = each!(self, d => d.config());
        snapshot::Header {
            version: env!("CARGO_PKG_VERSION").into(),
            backend: self.kind(),
            layers: config.num_layers,
            kv_heads: config.num_kv_heads,
            head_dim: config.head_dim,
            tokens,
        }
    }

    /// The first `len` cached tokens with their keys and values, as bytes (`backend::snapshot`).
    pub fn save_cache(&self, len: usize) -> Result<Vec<u8>> {
        if len > self.len() {
            return Err(WispError::InvalidInput(format!(
                "cannot save {len} tokens of the cache: it holds {}",
                self.len()
            )));
        }
        // Every layer holds at least the history's rows (the CPU's grow with it, the GPU's are allocated
        // for the whole context), so the first `len` are there.
        let (keys, values) = each!(self, d => d.kv());
        Ok(snapshot::write(
            &self.snapshot_header(len),
            self.tokens(),
            keys,
            values,
        ))
    }

    /// Replaces the cache by bytes of [`Decoder::save_cache`] and returns their tokens. Bytes made by
    /// another version, backend or model shape, damaged ones, and more tokens than the context holds are
    /// `INVALID_INPUT` / `CONTEXT_OVERFLOW`, with the cache unchanged.
    pub fn restore_cache(&mut self, bytes: &[u8]) -> Result<Vec<u32>> {
        let snap = snapshot::read(bytes, &self.snapshot_header(0))?;
        let vocab = each!(self, d => d.config().vocab_size);
        TokenHistory::new(self.capacity()).check(&snap.tokens, vocab)?;
        // Within the capacity, so within the GPU's preallocated rows too.
        each!(self, d => d.set_kv(snap.keys, snap.values));
        let history = self.history_mut();
        history.seek(0)?;
        history.extend(&snap.tokens);
        Ok(snap.tokens)
    }

    /// Appends `tokens` to the cache and returns the logits after each of them, each as a one-token
    /// step gives it (draft verification).
    pub async fn forward(&mut self, tokens: &[u32]) -> Result<Vec<Vec<f32>>> {
        self.forward_rows(tokens, Rows::Every).await
    }

    /// Appends `tokens` to the cache and returns the logits after the last one (a prefill).
    pub async fn forward_last(&mut self, tokens: &[u32]) -> Result<Vec<f32>> {
        self.last_row(tokens, Rows::LastOfPrompt).await
    }

    /// Appends `tokens` (a sampled token and the ones a grammar forced after it) and returns the logits
    /// after the last one, as one-token steps give them: the head runs once, not once a token.
    pub async fn forward_steps(&mut self, tokens: &[u32]) -> Result<Vec<f32>> {
        self.last_row(tokens, Rows::LastOfSteps).await
    }

    async fn last_row(&mut self, tokens: &[u32], rows: Rows) -> Result<Vec<f32>> {
        let mut rows = self.forward_rows(tokens, rows).await?;
        rows.pop()
            .ok_or_else(|| WispError::InvalidInput("no tokens to run".into()))
    }

    async fn forward_rows(&mut self, tokens: &[u32], rows: Rows) -> Result<Vec<Vec<f32>>> {
        match self {
            #[cfg(feature = "webgpu")]
            Decoder::Gpu(d) => d.forward_rows(tokens, rows != Rows::Every).await,
            Decoder::Cpu(d) => d.forward_rows(tokens, rows),
        }
    }

    /// How this backend should draft. The GPU graph always runs a whole chunk, so the rows after the
    /// new token are free: fill them, from any match. On the CPU each row costs nearly a token's
    /// arithmetic: benches-web measured default drafting at 0.48x (wisp-mini) and 0.73x (SmolLM2) the
    /// speed of plain decoding, so it is off unless asked for (`draft_len`), and then drafts only from
    /// matches of two tokens or more, shortening while drafts keep failing.
    pub fn draft_policy(&self) -> DraftPolicy {
        match self {
            #[cfg(feature = "webgpu")]
            Decoder::Gpu(d) => DraftPolicy {
                max_len: d.chunk_len() - 1,
                min_ngram: 1,
                adaptive: false,
            },
            Decoder::Cpu(_) => DraftPolicy {
                max_len: 0,
                min_ngram: 2,
                adaptive: true,
            },
        }
    }
}
