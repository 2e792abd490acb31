//! The decoder's weights as the CPU kernels read them, loaded by Hugging Face name from a GGUF or
//! safetensors file: projections as [`Matrix`] (still quantized when the file is), norms and biases f32.

use super::matrix::Matrix;
use crate::error::{Result, WispError};
use crate::model::source::gguf_name;
use crate::model::{ModelConfig, ModelWeights};
use crate::weights::Weights;

/// `x W^T + b`.
pub(crate) struct Linear {
    pub w: Matrix,
    pub bias: Option<Vec<f32>>,
}

pub(crate) struct Layer {
    pub attn_norm: Vec<f32>,
    pub q: Linear,
    pub k: Linear,
    pub v: Linear,
    /// Qwen3's per-head norms of q and k.
    pub qk_norm: Option<(Vec<f32>, Vec<f32>)>,
    pub o: Matrix,
    pub ffn_norm: Vec<f32>,
    pub gate: Matrix,
    pub up: Matrix,
    pub down: Matrix,
}

pub(crate) struct CpuWeights {
    pub embed: Matrix,
    pub layers: Vec<Layer>,
    pub norm: Vec<f32>,
    /// `None` when the head is tied to the embedding.
    pub head: Option<Matrix>,
}

impl CpuWeights {
    /// Bytes of weights one token's forward pass reads (the embedding lookup reads one row, left out).
    pub fn bytes_per_token(&self) -> usize {
        let layers: usize = self
            .layers
            .iter()
            .map(|l| {
                [&l.q.w, &l.k.w, &l.v.w, &l.o, &l.gate, &l.up, &l.down]
                    .iter()
                    .map(|m| m.weight_bytes())
                    .sum::<usize>()
            })
            .sum();
        layers + self.head.as_ref().unwrap_or(&self.embed).weight_bytes()
    }
}

struct Loader<'w, 'a> {
    weights: &'w Weights<'a>,
    source: &'w ModelWeights<'a>,
}

impl Loader<'_, '_> {
    /// The file's name for a Hugging Face tensor name, checked to have shape `dims`.
    fn checked(&self, name: &str, dims: &[usize]) -> Result<String> {
        let file_name = match self.weights {
            Weights::Gguf(_) => gguf_name(name).ok_or_else(|| {
                WispError::InvalidModel(format!("no GGUF name for tensor '{name}'"))
            })?,
            Weights::Safetensors(_) => name.to_string(),
        };
        let shape = self.weights.shape(&file_name)?;
        if shape != dims {
            return Err(WispError::InvalidWeights(format!(
                "tensor '{file_name}' has shape {shape:?}; the configuration needs {dims:?}"
            )));
        }
        Ok(file_name)
    }

    fn vector(&self, name: &str, n: usize) -> Result<Vec<f32>> {
        let file_name = self.checked(name, &[n])?;
        self.weights.to_f32(&file_name)
    }

    /// A projection, with the adapters' terms for it.
    fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Matrix> {
        let matrix = self.plain_matrix(name, rows, cols)?;
        Ok(match gguf_name(name) {
            Some(gguf) => matrix.with_low_rank(self.source.adapters.terms(&gguf)),
            None => matrix,
        })
    }

    fn plain_matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Matrix> {
        let file_name = self.checked(name, &[rows, cols])?;
        match self.weights {
            Weights::Gguf(f) => {
                let t = f.tensor(&file_name).ok_or_else(|| {
                    WispError::InvalidWeights(format!("GGUF file has no tensor '{file_name}'"))
                })?;
                Matrix::from_gguf(t, rows, cols)
            }
            Weights::Safetensors(_) => {
                Ok(Matrix::dense(rows, cols, self.weights.to_f32(&file_name)?))
            }
        }
    }

    fn linear(&self, name: &str, rows: usize, cols: usize, bias: bool) -> Result<Linear> {
        Ok(Linear {
            w: self.matrix(&format!("{name}.weight"), rows, cols)?,
            bias: if bias {
                Some(self.vector(&format!("{name}.bias"), rows)?)
            } else {
                None
            },
        })
    }
}

/// Loads every tensor `config` needs. Fails with `INVALID_WEIGHTS` naming a missing or misshapen tensor.
pub(crate) fn load(config: &ModelConfig, weights: &ModelWeights) -> Result<CpuWeights> {
    let w = Loader {
        weights: &weights.weights,
        source: weights,
    };
    let (d, ff, v) = (
        config.hidden_size,
        config.intermediate_size,
        config.vocab_size,
    );
    let (qw, kw) = (
        config.num_heads * config.head_dim,
        config.num_kv_heads * config.head_dim,
    );
    let bias = config.attention_bias;
    let layers = (0..config.num_layers)
        .map(|l| {
            let p = format!("model.layers.{l}");
            Ok(Layer {
                attn_norm: w.vector(&format!("{p}.input_layernorm.weight"), d)?,
                q: w.linear(&format!("{p}.self_attn.q_proj"), qw, d, bias)?,
                k: w.linear(&format!("{p}.self_attn.k_proj"), kw, d, bias)?,
                v: w.linear(&format!("{p}.self_attn.v_proj"), kw, d, bias)?,
                qk_norm: if config.qk_norm {
                    Some((
                        w.vector(&format!("{p}.self_attn.q_norm.weight"), config.head_dim)?,
                        w.vector(&format!("{p}.self_attn.k_norm.weight"), config.head_dim)?,
                    ))
                } else {
                    None
                },
                o: w.matrix(&format!("{p}.self_attn.o_proj.weight"), d, qw)?,
                ffn_norm: w.vector(&format!("{p}.post_attention_layernorm.weight"), d)?,
                gate: w.matrix(&format!("{p}.mlp.gate_proj.weight"), ff, d)?,
                up: w.matrix(&format!("{p}.mlp.up_proj.weight"), ff, d)?,
                down: w.matrix(&format!("{p}.mlp.down_proj.weight"), d, ff)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(CpuWeights {
        embed: w.matrix("model.embed_tokens.weight", v, d)?,
        layers,
        norm: w.vector("model.norm.weight", d)?,
        head: if config.tie_word_embeddings {
            None
        } else {
            Some(w.matrix("lm_head.weight", v, d)?)
        },
    })
}
