//! Runs the decoder graph chunk by chunk, keeping the key/value cache of every layer on the CPU side.
//!
//! The graph (see `graph::builder`) takes `T` tokens at consecutive positions plus the `S` cached rows of
//! each layer, and returns the logits and the new key/value rows, which are written into the cache here.

use std::collections::HashMap;

use super::{adapter_info, AdapterInfo, Feed, GraphSession};
use crate::error::{Result, WispError};
use crate::generate::{LogitRows, TokenHistory};
use crate::graph::{build_decoder, DecoderShape, WeightProvider};
use crate::model::{ModelConfig, RopeStyle};
use crate::profile::{now_ms, Profile};

/// Added to the attention score of a position a token must not see; exp() of it is 0.
const MASKED: f32 = -1.0e9;

pub struct GpuDecoder {
    session: GraphSession,
    config: ModelConfig,
    shape: DecoderShape,
    history: TokenHistory,
    past_k: Vec<Vec<f32>>,
    past_v: Vec<Vec<f32>>,
    past_names: Vec<(String, String)>,
    new_names: Vec<(String, String)>,
    /// Rotary frequency of each dimension of a head.
    freq: Vec<f64>,
    // Per-call inputs, allocated once.
    tokens: Vec<i64>,
    cos_q: Vec<f32>,
    sin_q: Vec<f32>,
    cos_k: Vec<f32>,
    sin_k: Vec<f32>,
    mask: Vec<f32>,
    profile: Profile,
}

impl GpuDecoder {
    /// Builds the graph for `shape` from the weights and compiles it on the GPU.
    pub async fn new(
        config: &ModelConfig,
        weights: &mut dyn WeightProvider,
        shape: DecoderShape,
    ) -> Result<Self> {
        check_limits(config, shape, &adapter_info().await?)?;
        let model = build_decoder(config, weights, shape)?;
        let session = GraphSession::from_model(model).await?;
        let (t, s) = (shape.chunk_len, shape.cache_len);
        let (h, kv, dh) = (config.num_heads, config.num_kv_heads, config.head_dim);
        let half = dh / 2;
        let freq = (0..dh)
            .map(|i| {
                let j = match config.rope_style {
                    RopeStyle::Halves => i % half,
                    RopeStyle::Interleaved => i / 2,
                };
                1.0 / f64::from(config.rope_theta).powf(2.0 * j as f64 / dh as f64)
            })
            .collect();
        let layers = config.num_layers;
        Ok(GpuDecoder {
            session,
            config: config.clone(),
            shape,
            history: TokenHistory::new(s),
            past_k: vec![vec![0.0; s * kv * dh]; layers],
            past_v: vec![vec![0.0; s * kv * dh]; layers],
            past_names: (0..layers)
                .map(|l| (format!("past_k.{l}"), format!("past_v.{l}")))
                .collect(),
            new_names: (0..layers)
                .map(|l| (format!("new_k.{l}"), format!("new_v.{l}")))
                .collect(),
            freq,
            tokens: vec![0; t],
            cos_q: vec![0.0; t * h * dh],
            sin_q: vec![0.0; t * h * dh],
            cos_k: vec![0.0; t * kv * dh],
            sin_k: vec![0.0; t * kv * dh],
            mask: vec![0.0; h * t * (s + t)],
            profile: Profile::default(),
        })
    }

    /// See `GraphSession::lose_device`.
    #[cfg(target_arch = "wasm32")]
    pub fn lose_device(&self) {
        self.session.lose_device();
    }

    /// Tokens per graph run.
    pub fn chunk_len(&self) -> usize {
        self.shape.chunk_len
    }

    pub fn profile_mut(&mut self) -> &mut Profile {
        &mut self.profile
    }

    /// The cached tokens: positions, prefix reuse, rollback.
    pub fn history(&self) -> &TokenHistory {
        &self.history
    }

    pub fn history_mut(&mut self) -> &mut TokenHistory {
        &mut self.history
    }

    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// Each layer's cached keys and values (rows past the history's length are stale).
    pub fn kv(&self) -> (&[Vec<f32>], &[Vec<f32>]) {
        (&self.past_k, &self.past_v)
    }

    /// Writes `keys` and `values` (whole rows, at most the cache's) over the first rows of the cache, for
    /// the tokens the caller then puts in the history.
    pub fn set_kv(&mut self, keys: Vec<Vec<f32>>, values: Vec<Vec<f32>>) {
        let caches = self.past_k.iter_mut().chain(&mut self.past_v);
        for (cache, new) in caches.zip(keys.iter().chain(&values)) {
            cache[..new.len()].copy_from_slice(new);
        }
    }

    /// Appends `tokens` to the cache and returns the logits after each of them, or after the last one
    /// only (wonnx reads every output back, but the other rows are not copied out).
    pub async fn forward_rows(&mut self, tokens: &[u32], last_only: bool) -> Result<Vec<Vec<f32>>> {
        self.history.check(tokens, self.config.vocab_size)?;
        let mut logits = Vec::with_capacity(if last_only { 1 } else { tokens.len() });
        for (chunk, rows) in LogitRows::chunks(tokens, self.shape.chunk_len, last_only) {
            self.run_chunk(chunk, rows, &mut logits).await?;
        }
        Ok(logits)
    }

    fn prepare(&mut self, chunk: &[u32]) {
        let (t, s) = (self.shape.chunk_len, self.shape.cache_len);
        let (h, kv, dh) = (
            self.config.num_heads,
            self.config.num_kv_heads,
            self.config.head_dim,
        );
        let scale = 1.0 / (dh as f64).sqrt();
        for i in 0..t {
            // Padding rows (past the chunk's end) repeat the last token; their outputs are dropped.
            self.tokens[i] = i64::from(chunk[i.min(chunk.len() - 1)]);
            let pos = (self.history.len() + i) as f64;
            for (d, &f) in self.freq.iter().enumerate() {
                let (sin, cos) = (pos * f).sin_cos();
                for head in 0..h {
                    let at = i * h * dh + head * dh + d;
                    self.cos_q[at] = (cos * scale) as f32;
                    self.sin_q[at] = (sin * scale) as f32;
                }
                for head in 0..kv {
                    let at = i * kv * dh + head * dh + d;
                    self.cos_k[at] = cos as f32;
                    self.sin_k[at] = sin as f32;
                }
            }
        }
        let cols = s + t;
        let past = self.history.len();
        for head in 0..h {
            for i in 0..t {
                let row = &mut self.mask[(head * t + i) * cols..][..cols];
                for (c, m) in row.iter_mut().enumerate() {
                    let visible = if c < s { c < past } else { c - s <= i };
                    *m = if visible { 0.0 } else { MASKED };
                }
            }
        }
    }

    async fn run_chunk(
        &mut self,
        chunk: &[u32],
        rows: LogitRows,
        logits: &mut Vec<Vec<f32>>,
    ) -> Result<()> {
        let t0 = now_ms();
        self.prepare(chunk);
        let t0 = self.profile.lap("inputs", t0);
        let mut feeds: HashMap<&str, Feed> = HashMap::with_capacity(6 + 2 * self.past_k.len());
        feeds.insert("tokens", Feed::I64(&self.tokens));
        feeds.insert("cos_q", Feed::F32(&self.cos_q));
        feeds.insert("sin_q", Feed::F32(&self.sin_q));
        feeds.insert("cos_k", Feed::F32(&self.cos_k));
        feeds.insert("sin_k", Feed::F32(&self.sin_k));
        feeds.insert("mask", Feed::F32(&self.mask));
        for (l, (k, v)) in self.past_names.iter().enumerate() {
            feeds.insert(k, Feed::F32(&self.past_k[l]));
            feeds.insert(v, Feed::F32(&self.past_v[l]));
        }
        let out = self.session.run(&feeds).await?;
        // wonnx's run uploads the inputs, dispatches, and reads every output back: one stage here.
        let t0 = self.profile.lap("wonnx_run", t0);

        let t = self.shape.chunk_len;
        let row = self.config.num_kv_heads * self.config.head_dim;
        let n = chunk.len();
        let past = self.history.len();
        for (l, (k, v)) in self.new_names.iter().enumerate() {
            for (name, cache) in [(k, &mut self.past_k[l]), (v, &mut self.past_v[l])] {
                let new = out
                    .get(name)
                    .ok_or_else(|| WispError::GpuInternal(format!("no output '{name}'")))?;
                cache[past * row..(past + n) * row].copy_from_slice(&new.data[..n * row]);
            }
        }
        let t0 = self.profile.lap("cache_write", t0);
        let all = out
            .get("logits")
            .ok_or_else(|| WispError::GpuInternal("no output 'logits'".into()))?;
        // logits is [V, T]: column i belongs to token i.
        let wanted = match rows {
            LogitRows::All => 0..n,
            LogitRows::Last => n - 1..n,
            LogitRows::None => 0..0,
        };
        for i in wanted {
            logits.push(all.data.iter().skip(i).step_by(t).copied().collect());
        }
        self.profile.lap("logits_copy", t0);
        self.profile.tokens_run += n as u64;
        self.history.extend(chunk);
        Ok(())
    }
}

/// Fails with `MODEL_TOO_LARGE` before any weight is read when one of the graph's largest buffers exceeds
/// what the device allows in one buffer or one storage binding: the adapter's limits, capped by WebGPU's
/// defaults, which are what wonnx requests.
pub fn check_limits(
    config: &ModelConfig,
    shape: DecoderShape,
    adapter: &AdapterInfo,
) -> Result<()> {
    let (d, ff, v) = (
        config.hidden_size as u64,
        config.intermediate_size as u64,
        config.vocab_size as u64,
    );
    let (h, kv, dh) = (
        config.num_heads as u64,
        config.num_kv_heads as u64,
        config.head_dim as u64,
    );
    let (t, s) = (shape.chunk_len as u64, shape.cache_len as u64);
    // Saturating: the sizes come from the model's metadata and the caller's context length, and a product
    // that wrapped around would pass the check.
    let product = |xs: &[u64]| xs.iter().fold(1u64, |a, &x| a.saturating_mul(x));
    let buffers = [
        ("the token embedding", product(&[v, d])),
        ("the output head's logits", product(&[v, t])),
        ("an MLP projection", product(&[d, ff])),
        ("the query projection", product(&[d, h, dh])),
        (
            "the attention mask and scores",
            product(&[h, t, s.saturating_add(t)]),
        ),
        ("a layer's key cache", product(&[s, kv, dh])),
    ];
    // wonnx asks for a device with WebGPU's default limits, whatever the adapter could give.
    let device = wgpu::Limits::default();
    let binding = adapter
        .max_storage_buffer_binding_size
        .min(u64::from(device.max_storage_buffer_binding_size));
    let buffer = adapter.max_buffer_size.min(device.max_buffer_size);
    let limit = binding.min(buffer);
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    for (what, floats) in buffers {
        let bytes = floats.saturating_mul(4);
        if bytes > limit {
            let which = if binding <= buffer {
                "maxStorageBufferBindingSize"
            } else {
                "maxBufferSize"
            };
            return Err(WispError::ModelTooLarge(format!(
                "{what} needs {:.1} MiB in one GPU buffer; the GPU device's {which} is {:.1} MiB",
                mib(bytes),
                mib(limit)
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Family, RopeStyle};

    #[test]
    fn a_vocabulary_too_large_for_one_buffer_is_named() {
        let config = ModelConfig {
            family: Family::Qwen2,
            hidden_size: 896,
            intermediate_size: 4864,
            num_heads: 14,
            num_kv_heads: 2,
            head_dim: 64,
            num_layers: 24,
            vocab_size: 151_936,
            rms_norm_eps: 1e-6,
            rope_theta: 1e6,
            tie_word_embeddings: true,
            attention_bias: true,
            qk_norm: false,
            rope_style: RopeStyle::Halves,
            max_position_embeddings: 32768,
        };
        let adapter = AdapterInfo {
            vendor: String::new(),
            architecture: String::new(),
            device: String::new(),
            description: String::new(),
            is_fallback_adapter: false,
            max_storage_buffer_binding_size: 128 << 20,
            max_buffer_size: 256 << 20,
        };
        let shape = DecoderShape {
            chunk_len: 4,
            cache_len: 512,
        };
        let err = check_limits(&config, shape, &adapter).unwrap_err();
        assert_eq!(err.code(), "MODEL_TOO_LARGE");
        assert_eq!(
            err.to_string(),
            "model too large: the token embedding needs 519.3 MiB in one GPU buffer; the GPU device's maxStorageBufferBindingSize is 128.0 MiB"
        );
        let small = ModelConfig {
            vocab_size: 32_768,
            ..config
        };
        assert!(check_limits(&small, shape, &adapter).is_ok());
        // Sizes from a file's metadata whose product wraps around u64 (2^62 x 4 = 0) are still too large
        // (on 64-bit targets: a wasm32 usize cannot hold 2^62).
        #[cfg(target_pointer_width = "64")]
        {
            let wrapping = ModelConfig {
                vocab_size: 1 << 62,
                hidden_size: 4,
                ..small
            };
            let err = check_limits(&wrapping, shape, &adapter).unwrap_err();
            assert_eq!(err.code(), "MODEL_TOO_LARGE");
            assert!(err.to_string().contains("the token embedding"), "{err}");
        }
    }
}
