//! One forward pass over a chunk of `T` tokens at consecutive positions, reading the `S` cached keys and
//! values of earlier positions.
//!
//! Inputs:  `tokens` i64 [T]; `cos_q`, `sin_q` [T, H*dh] and `cos_k`, `sin_k` [T, Hkv*dh] (rotary tables
//! tiled per head, the q ones pre-scaled by 1/sqrt(dh)); `mask` [H*T, S+T] (0 or a large negative number;
//! row h*T+t is token t as seen by head h); per layer `past_k.L`, `past_v.L` [S, Hkv*dh].
//! Outputs: `logits` [V, T] (column t is token t); per layer `new_k.L`, `new_v.L` [T, Hkv*dh], which the
//! caller writes into its cache.
//!
//! The cache lives with the caller rather than in the graph because wonnx reads back every output on every
//! run: returning only the new rows keeps the readback at T rows a layer.

use wonnx::onnx::{ModelProto, TensorProto_DataType};

use super::onnx::{GraphWriter, Value};
use super::{DecoderShape, WeightProvider};
use crate::error::{Result, WispError};
use crate::model::{ModelConfig, RopeStyle};

fn transpose(data: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0.0; data.len()];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = data[r * cols + c];
        }
    }
    out
}

/// The matrix R with `x R = rotate(x)` for every head of a `[*, heads*dh]` row: block diagonal.
fn rotation_matrix(heads: usize, dh: usize, style: RopeStyle) -> Vec<f32> {
    let n = heads * dh;
    let mut r = vec![0.0; n * n];
    let half = dh / 2;
    for h in 0..heads {
        let o = h * dh;
        for i in 0..half {
            let (a, b) = match style {
                RopeStyle::Halves => (i, i + half),
                RopeStyle::Interleaved => (2 * i, 2 * i + 1),
            };
            // rotate(x)[a] = -x[b], rotate(x)[b] = x[a]
            r[(o + b) * n + (o + a)] = -1.0;
            r[(o + a) * n + (o + b)] = 1.0;
        }
    }
    r
}

struct Builder<'a> {
    g: GraphWriter,
    cfg: &'a ModelConfig,
    weights: &'a mut dyn WeightProvider,
    t: i64,
}

impl Builder<'_> {
    fn load(&mut self, name: &str, dims: &[usize]) -> Result<Vec<f32>> {
        self.weights.tensor(name, dims)
    }

    /// A projection weight stored `[out, in]`, as the `[in, out]` right operand of a MatMul.
    fn projection(&mut self, name: &str, out: usize, inp: usize) -> Result<Value> {
        let w = self.load(name, &[out, inp])?;
        self.g
            .weight(name, &[inp as i64, out as i64], transpose(&w, out, inp))
    }

    fn vector(&mut self, name: &str, n: usize) -> Result<Value> {
        let w = self.load(name, &[n])?;
        self.g.weight(name, &[n as i64], w)
    }

    /// `x W^T (+ b)`; `output` names the result as a graph output.
    fn linear(
        &mut self,
        x: &Value,
        name: &str,
        out: usize,
        bias: bool,
        output: Option<&str>,
    ) -> Result<Value> {
        let inp = x.dims[1] as usize;
        let w = self.projection(&format!("{name}.weight"), out, inp)?;
        if bias {
            let y = self.g.matmul(x, &w, None)?;
            let b = self.vector(&format!("{name}.bias"), out)?;
            match output {
                Some(n) => self.g.add_named(&y, &b, n),
                None => self.g.add(&y, &b),
            }
        } else {
            self.g.matmul(x, &w, output)
        }
    }

    /// RMSNorm over the last axis of a rank-2 value.
    fn rms_norm(&mut self, x: &Value, weight: &str, eps: &Value) -> Result<Value> {
        let n = x.dims[1] as usize;
        let sq = self.g.mul(x, x)?;
        let ms = self.g.reduce_last("ReduceMean", &sq)?;
        let ms = self.g.add(&ms, eps)?;
        let rms = self.g.unary("Sqrt", &ms);
        let y = self.g.div(x, &rms)?;
        let w = self.vector(weight, n)?;
        self.g.mul(&y, &w)
    }

    /// RMSNorm of each head of a `[T, heads*dh]` value (Qwen3's q and k norms).
    fn head_norm(&mut self, x: &Value, heads: usize, weight: &str, eps: &Value) -> Result<Value> {
        let dh = self.cfg.head_dim as i64;
        let flat = self.g.reshape(x, &[self.t * heads as i64, dh])?;
        let normed = self.rms_norm(&flat, weight, eps)?;
        self.g.reshape(&normed, &x.dims)
    }

    fn rope(
        &mut self,
        x: &Value,
        rot: &Value,
        cos: &Value,
        sin: &Value,
        out: Option<&str>,
    ) -> Result<Value> {
        let rotated = self.g.matmul(x, rot, None)?;
        let a = self.g.mul(x, cos)?;
        let b = self.g.mul(&rotated, sin)?;
        match out {
            Some(name) => self.g.add_named(&a, &b, name),
            None => self.g.add(&a, &b),
        }
    }
}

/// Builds the decoder graph. Fails with `INVALID_MODEL` naming the field or tensor when the configuration,
/// the shape or a weight does not fit.
pub fn build_decoder(
    cfg: &ModelConfig,
    weights: &mut dyn WeightProvider,
    shape: DecoderShape,
) -> Result<ModelProto> {
    cfg.validate()?;
    let DecoderShape {
        chunk_len,
        cache_len,
    } = shape;
    super::check_chunk_len(chunk_len)?;
    if cache_len < 2 || cache_len % 2 != 0 {
        return Err(WispError::InvalidRequest(format!(
            "cache_len is {cache_len}; it must be even and at least 2"
        )));
    }
    let (d, ff, v) = (cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size);
    let (h, kv, dh) = (cfg.num_heads, cfg.num_kv_heads, cfg.head_dim);
    let (t, s) = (chunk_len as i64, cache_len as i64);
    let (qw, kw) = ((h * dh) as i64, (kv * dh) as i64);
    let f32t = TensorProto_DataType::FLOAT;

    let mut b = Builder {
        g: GraphWriter::default(),
        cfg,
        weights,
        t,
    };
    let tokens = b.g.input("tokens", &[t], TensorProto_DataType::INT64);
    let cos_q = b.g.input("cos_q", &[t, qw], f32t);
    let sin_q = b.g.input("sin_q", &[t, qw], f32t);
    let cos_k = b.g.input("cos_k", &[t, kw], f32t);
    let sin_k = b.g.input("sin_k", &[t, kw], f32t);
    let mask = b.g.input("mask", &[h as i64 * t, s + t], f32t);

    let eps = b.g.scalar("eps", cfg.rms_norm_eps)?;
    let rot_q =
        b.g.weight("rot_q", &[qw, qw], rotation_matrix(h, dh, cfg.rope_style))?;
    let rot_k =
        b.g.weight("rot_k", &[kw, kw], rotation_matrix(kv, dh, cfg.rope_style))?;
    // Query head j reads key/value head j / (h / kv).
    let kv_of_head = b.g.ints(
        "kv_of_head",
        (0..h).map(|j| (j / (h / kv)) as i64).collect(),
    );

    let embed = b.load("model.embed_tokens.weight", &[v, d])?;
    let embed = b.g.weight("embed", &[v as i64, d as i64], embed)?;
    let mut x = b.g.gather0(&embed, &tokens);

    for l in 0..cfg.num_layers {
        let p = format!("model.layers.{l}");
        let past_k = b.g.input(&format!("past_k.{l}"), &[s, kw], f32t);
        let past_v = b.g.input(&format!("past_v.{l}"), &[s, kw], f32t);

        let a = b.rms_norm(&x, &format!("{p}.input_layernorm.weight"), &eps)?;
        let mut q = b.linear(
            &a,
            &format!("{p}.self_attn.q_proj"),
            h * dh,
            cfg.attention_bias,
            None,
        )?;
        let mut k = b.linear(
            &a,
            &format!("{p}.self_attn.k_proj"),
            kv * dh,
            cfg.attention_bias,
            None,
        )?;
        let new_v = b.linear(
            &a,
            &format!("{p}.self_attn.v_proj"),
            kv * dh,
            cfg.attention_bias,
            Some(&format!("new_v.{l}")),
        )?;
        b.g.output(&new_v);
        if cfg.qk_norm {
            q = b.head_norm(&q, h, &format!("{p}.self_attn.q_norm.weight"), &eps)?;
            k = b.head_norm(&k, kv, &format!("{p}.self_attn.k_norm.weight"), &eps)?;
        }
        let q = b.rope(&q, &rot_q, &cos_q, &sin_q, None)?;
        let k = b.rope(&k, &rot_k, &cos_k, &sin_k, Some(&format!("new_k.{l}")))?;
        b.g.output(&k);

        let keys = b.g.concat0(&past_k, &k)?; // [S+T, kw]
        let values = b.g.concat0(&past_v, &new_v)?;
        let keys = b.g.reshape(&keys, &[s + t, kv as i64, dh as i64])?;
        let keys = b.g.transpose(&keys, &[1, 2, 0]); // [kv, dh, S+T]
        let keys = b.g.gather0(&keys, &kv_of_head); // [h, dh, S+T]
        let values = b.g.reshape(&values, &[s + t, kv as i64, dh as i64])?;
        let values = b.g.transpose(&values, &[1, 0, 2]); // [kv, S+T, dh]
        let values = b.g.gather0(&values, &kv_of_head); // [h, S+T, dh]
        let qh = b.g.reshape(&q, &[t, h as i64, dh as i64])?;
        let qh = b.g.transpose(&qh, &[1, 0, 2]); // [h, T, dh]

        let scores = b.g.matmul(&qh, &keys, None)?; // [h, T, S+T]
        let scores = b.g.reshape(&scores, &[h as i64 * t, s + t])?;
        let scores = b.g.add(&scores, &mask)?;
        let max = b.g.reduce_last("ReduceMax", &scores)?;
        let shifted = b.g.sub(&scores, &max)?;
        let e = b.g.unary("Exp", &shifted);
        let sum = b.g.reduce_last("ReduceSum", &e)?;
        let probs = b.g.div(&e, &sum)?;
        let probs = b.g.reshape(&probs, &[h as i64, t, s + t])?;
        let att = b.g.matmul(&probs, &values, None)?; // [h, T, dh]
        let att = b.g.transpose(&att, &[1, 0, 2]);
        let att = b.g.reshape(&att, &[t, qw])?;
        let o = b.linear(&att, &format!("{p}.self_attn.o_proj"), d, false, None)?;
        x = b.g.add(&x, &o)?;

        let m = b.rms_norm(&x, &format!("{p}.post_attention_layernorm.weight"), &eps)?;
        let gate = b.linear(&m, &format!("{p}.mlp.gate_proj"), ff, false, None)?;
        let up = b.linear(&m, &format!("{p}.mlp.up_proj"), ff, false, None)?;
        let sig = b.g.unary("Sigmoid", &gate);
        let act = b.g.mul(&gate, &sig)?;
        let act = b.g.mul(&act, &up)?;
        let down = b.linear(&act, &format!("{p}.mlp.down_proj"), d, false, None)?;
        x = b.g.add(&x, &down)?;
    }

    let x = b.rms_norm(&x, "model.norm.weight", &eps)?;
    // logits^T = W x^T with W [V, D] as stored: tied models then keep one copy of the embedding.
    let head = if cfg.tie_word_embeddings {
        embed
    } else {
        let w = b.load("lm_head.weight", &[v, d])?;
        b.g.weight("lm_head", &[v as i64, d as i64], w)?
    };
    let xt = b.g.transpose(&x, &[1, 0]);
    let logits = b.g.matmul(&head, &xt, Some("logits"))?;
    b.g.output(&logits);
    Ok(b.g.finish())
}
