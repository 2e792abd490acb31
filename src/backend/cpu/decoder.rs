//! The decoder on the CPU: the same positions, cache and chunked forward passes as the GPU decoder,
//! computed with the kernels of this module instead of a wonnx graph.

use super::layer::{self, Heads, Rope};
use super::matrix::{self, Pass};
use super::parallel;
use super::weights::{self, CpuWeights};
use crate::backend::Rows;
use crate::error::{Result, WispError};
use crate::generate::{LogitRows, TokenHistory};
use crate::model::{ModelConfig, ModelWeights};
use crate::profile::{now_ms, Profile};

/// Tokens per forward pass: each weight row is read (and, quantized, converted to f32) once per chunk,
/// and each of a chunk's loops is one handover to the other threads, so longer chunks cost less per
/// token; the activations of a chunk (`CHUNK * intermediate_size` floats at most) stay small. Measured
/// in Chromium, 256-token prompts: 128 against 32 took 7% less time on SmolLM2 on one thread and 13%
/// less on two, and 13% less for the bundled model on two.
const CHUNK: usize = 128;

pub struct CpuDecoder {
    config: ModelConfig,
    weights: CpuWeights,
    rope: Rope,
    history: TokenHistory,
    /// Per layer, the keys and values of cached positions, `[position][kv_heads * head_dim]` (the wonnx
    /// runtime's layout). Rows past `len` are stale and overwritten by the next chunk.
    keys: Vec<Vec<f32>>,
    values: Vec<Vec<f32>>,
    profile: Profile,
}

impl CpuDecoder {
    /// Loads the weights the configuration needs (quantized ones stay quantized) for a context of
    /// `context_len` tokens.
    pub fn new(config: &ModelConfig, weights: &ModelWeights, context_len: usize) -> Result<Self> {
        config.validate()?;
        if context_len == 0 {
            return Err(WispError::InvalidRequest(
                "context_len is 0; it must be at least 1".into(),
            ));
        }
        let weights = weights::load(config, weights)?;
        Ok(CpuDecoder {
            config: config.clone(),
            weights,
            rope: Rope::new(config.rope_style, config.head_dim, config.rope_theta),
            history: TokenHistory::new(context_len),
            keys: vec![Vec::new(); config.num_layers],
            values: vec![Vec::new(); config.num_layers],
            profile: Profile::default(),
        })
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
        (&self.keys, &self.values)
    }

    /// Replaces the cache by `keys` and `values` of the tokens the caller then puts in the history.
    pub fn set_kv(&mut self, keys: Vec<Vec<f32>>, values: Vec<Vec<f32>>) {
        self.keys = keys;
        self.values = values;
    }

    /// Bytes of weights a forward pass reads per chunk: the floor of a token's time is this over the
    /// memory bandwidth.
    pub fn weight_bytes_per_pass(&self) -> usize {
        self.weights.bytes_per_token()
    }

    /// Appends `tokens` to the cache and returns the logits `rows` asks for: after the last token only,
    /// the output head (vocabulary x hidden, often the largest matrix) runs for one row instead of every
    /// token. Refused inputs leave the cache as it was.
    pub fn forward_rows(&mut self, tokens: &[u32], rows: Rows) -> Result<Vec<Vec<f32>>> {
        self.history.check(tokens, self.config.vocab_size)?;
        let work = tokens.len().saturating_mul(macs_per_token(&self.config));
        let last_only = rows != Rows::Every;
        // Only a prompt's products may be grouped for speed; other passes equal one-token steps.
        let pass = if rows == Rows::LastOfPrompt {
            Pass::Prefill
        } else {
            Pass::Stepwise
        };
        parallel::on_pool(work, || {
            let mut logits = Vec::with_capacity(if last_only { 1 } else { tokens.len() });
            for (chunk, rows) in LogitRows::chunks(tokens, CHUNK, last_only) {
                self.run_chunk(chunk, rows, pass, &mut logits)?;
            }
            Ok(logits)
        })
    }

    fn run_chunk(
        &mut self,
        chunk: &[u32],
        rows: LogitRows,
        pass: Pass,
        logits: &mut Vec<Vec<f32>>,
    ) -> Result<()> {
        let cfg = &self.config;
        let (n, start, eps) = (chunk.len(), self.history.len(), cfg.rms_norm_eps);
        let (d, ff, vocab) = (cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size);
        let heads = Heads {
            q: cfg.num_heads,
            kv: cfg.num_kv_heads,
            dim: cfg.head_dim,
        };
        let (qw, kw) = (heads.q * heads.dim, heads.kv * heads.dim);
        let w = &self.weights;
        let p = &mut self.profile;

        let t = now_ms();
        let mut x = vec![0.0; n * d];
        for (row, &id) in x.chunks_exact_mut(d).zip(chunk) {
            w.embed.row(id as usize, row);
        }
        let (mut a, mut o) = (vec![0.0; n * d], vec![0.0; n * d]);
        let (mut q, mut att) = (vec![0.0; n * qw], vec![0.0; n * qw]);
        let (mut k, mut v) = (vec![0.0; n * kw], vec![0.0; n * kw]);
        let mut gate = vec![0.0; n * ff];
        let angles = self.rope.angles(start..start + n);
        let half = heads.dim / 2;
        let mut t = p.lap("embed", t);
        for ((layer, keys), values) in w.layers.iter().zip(&mut self.keys).zip(&mut self.values) {
            layer::rms_norm(&x, &layer.attn_norm, eps, &mut a);
            t = p.lap("norm", t);
            matrix::products(
                &mut [
                    (&layer.q.w, &mut q),
                    (&layer.k.w, &mut k),
                    (&layer.v.w, &mut v),
                ],
                &a,
                pass,
            )?;
            for (l, out) in [(&layer.q, &mut q), (&layer.k, &mut k), (&layer.v, &mut v)] {
                if let Some(b) = &l.bias {
                    layer::add_rows(out, b);
                }
            }
            t = p.lap("matmul", t);
            if let Some((q_norm, k_norm)) = &layer.qk_norm {
                layer::head_norm(&mut q, q_norm, eps);
                layer::head_norm(&mut k, k_norm, eps);
            }
            for ((qt, kt), at) in q
                .chunks_exact_mut(qw)
                .zip(k.chunks_exact_mut(kw))
                .zip(angles.chunks_exact(half.max(1)))
            {
                self.rope.apply(qt, at);
                self.rope.apply(kt, at);
            }
            keys.truncate(start * kw);
            keys.extend_from_slice(&k);
            values.truncate(start * kw);
            values.extend_from_slice(&v);
            t = p.lap("rope_cache", t);
            layer::attention(&q, keys, values, start, heads, &mut att);
            t = p.lap("attention", t);
            layer.o.matmul(&att, &mut o, pass)?;
            t = p.lap("matmul", t);
            layer::add(&mut x, &o);

            layer::rms_norm(&x, &layer.ffn_norm, eps, &mut a);
            t = p.lap("norm", t);
            matrix::swiglu_products(&layer.gate, &layer.up, &a, &mut gate, pass)?;
            t = p.lap("matmul", t);
            layer.down.matmul(&gate, &mut o, pass)?;
            t = p.lap("matmul", t);
            layer::add(&mut x, &o);
        }
        let head = w.head.as_ref().unwrap_or(&w.embed);
        let last = &x[(n - 1) * d..];
        match rows {
            LogitRows::All => {
                layer::rms_norm(&x, &w.norm, eps, &mut a);
                let mut out = vec![0.0; n * vocab];
                head.matmul(&a, &mut out, pass)?;
                logits.extend(out.chunks_exact(vocab).map(<[f32]>::to_vec));
            }
            LogitRows::Last => {
                let normed = &mut a[..d];
                layer::rms_norm(last, &w.norm, eps, normed);
                let mut out = vec![0.0; vocab];
                head.matmul(normed, &mut out, pass)?;
                logits.push(out);
            }
            LogitRows::None => {}
        }
        p.lap("head", t);
        p.tokens_run += n as u64;
        self.history.extend(chunk);
        Ok(())
    }
}

/// Multiply-adds of one token's pass through the weights (attention's, which grow with the context, left
/// out). Saturating: wasm32's usize passes 4 G within a chunk of a 135M-parameter model.
fn macs_per_token(cfg: &ModelConfig) -> usize {
    let (d, ff) = (cfg.hidden_size, cfg.intermediate_size);
    let (qw, kw) = (
        cfg.num_heads.saturating_mul(cfg.head_dim),
        cfg.num_kv_heads.saturating_mul(cfg.head_dim),
    );
    // Per layer: q, k and v, then o (qw * d), then gate, up and down.
    let width = qw
        .saturating_add(kw.saturating_mul(2))
        .saturating_add(qw)
        .saturating_add(ff.saturating_mul(3));
    cfg.num_layers
        .saturating_mul(d.saturating_mul(width))
        .saturating_add(cfg.vocab_size.saturating_mul(d))
}
