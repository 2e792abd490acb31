//! A model's weights as the graph builder asks for them (Hugging Face tensor names and layouts), from a
//! GGUF file or from safetensors plus `config.json`.

use std::collections::BTreeMap;

use crate::error::{Result, WispError};
use crate::graph::WeightProvider;
use crate::model::{Family, ModelConfig, RopeStyle};
use crate::weights::gguf::Metadata;
use crate::weights::lora::{Adapter, Adapters};
use crate::weights::{FileBytes, Weights};

pub struct ModelWeights<'a> {
    pub(crate) weights: Weights<'a>,
    /// LoRA adapters' terms, by the GGUF name of the weight each adapts.
    pub(crate) adapters: Adapters,
}

/// The GGUF name (llama.cpp's convention) of a Hugging Face tensor name.
pub(crate) fn gguf_name(hf: &str) -> Option<String> {
    let fixed = match hf {
        "model.embed_tokens.weight" => Some("token_embd.weight"),
        "model.norm.weight" => Some("output_norm.weight"),
        "lm_head.weight" => Some("output.weight"),
        _ => None,
    };
    if let Some(name) = fixed {
        return Some(name.to_string());
    }
    let rest = hf.strip_prefix("model.layers.")?;
    let (layer, rest) = rest.split_once('.')?;
    let (module, suffix) = rest.rsplit_once('.')?;
    let part = match module {
        "input_layernorm" => "attn_norm",
        "post_attention_layernorm" => "ffn_norm",
        "self_attn.q_proj" => "attn_q",
        "self_attn.k_proj" => "attn_k",
        "self_attn.v_proj" => "attn_v",
        "self_attn.o_proj" => "attn_output",
        "self_attn.q_norm" => "attn_q_norm",
        "self_attn.k_norm" => "attn_k_norm",
        "mlp.gate_proj" => "ffn_gate",
        "mlp.up_proj" => "ffn_up",
        "mlp.down_proj" => "ffn_down",
        _ => return None,
    };
    Some(format!("blk.{layer}.{part}.{suffix}"))
}

impl<'a> ModelWeights<'a> {
    /// Reads a GGUF file in memory (configuration from its metadata), or safetensors with its
    /// `config.json`.
    pub fn load(bytes: &'a [u8], config_json: Option<&str>) -> Result<(ModelConfig, Self)> {
        Self::open(bytes, FileBytes::Memory(bytes), config_json)
    }

    /// As [`Self::load`], for `file` with `header` from [`FileBytes::header`].
    pub fn open(
        header: &'a [u8],
        file: FileBytes<'a>,
        config_json: Option<&str>,
    ) -> Result<(ModelConfig, Self)> {
        let weights = Weights::open(header, file)?;
        let config = match (&weights, config_json) {
            (_, Some(json)) => ModelConfig::from_hf_json(json)?,
            (Weights::Gguf(file), None) => {
                let vocab = weights
                    .shape("token_embd.weight")?
                    .first()
                    .copied()
                    .unwrap_or(0);
                let tied = file.tensor("output.weight").is_none();
                config_from_gguf(file.metadata(), vocab, tied)?
            }
            (Weights::Safetensors(_), None) => {
                return Err(WispError::InvalidModel(
                    "safetensors weights need the model's config.json".into(),
                ))
            }
        };
        Ok((
            config,
            ModelWeights {
                weights,
                adapters: Adapters::default(),
            },
        ))
    }

    /// Adds LoRA adapters (`(GGUF bytes, scale)`), each checked against `config`: its architecture, and
    /// that every term adapts a projection (or the untied head) of the model at its shape.
    pub fn set_adapters(
        &mut self,
        config: &ModelConfig,
        adapters: &[(Vec<u8>, f32)],
    ) -> Result<()> {
        let arch = match config.family {
            Family::Llama => "llama",
            Family::Qwen2 => "qwen2",
            Family::Qwen3 => "qwen3",
        };
        let parsed = adapters
            .iter()
            .map(|(bytes, scale)| Adapter::parse(bytes, arch, *scale))
            .collect::<Result<Vec<_>>>()?;
        let mut adapters = Adapters::new(parsed, &adapted_weights(config))?;
        // llama.cpp stores a Llama's q and k rows permuted for its rope, and so do its adapters; weights
        // from safetensors keep Hugging Face's order, so the adapters' rows are put back in it.
        if config.family == Family::Llama && config.rope_style == RopeStyle::Halves {
            let hd = config.head_dim;
            let order = |heads: usize| -> Vec<usize> {
                (0..heads * hd)
                    .map(|r| {
                        let (h, j, i) = (r / hd, r % hd / (hd / 2), r % (hd / 2));
                        h * hd + 2 * i + j
                    })
                    .collect()
            };
            adapters.permute_rows(|name| {
                if name.ends_with(".attn_q.weight") {
                    Some(order(config.num_heads))
                } else if name.ends_with(".attn_k.weight") {
                    Some(order(config.num_kv_heads))
                } else {
                    None
                }
            });
        }
        self.adapters = adapters;
        Ok(())
    }

    /// GGUF metadata (the tokenizer and chat template live there), if the file is GGUF.
    pub fn metadata(&self) -> Option<&Metadata<'a>> {
        self.weights.metadata()
    }
}

/// The weights an adapter may adapt, by GGUF name, with their `[rows, cols]`.
fn adapted_weights(config: &ModelConfig) -> BTreeMap<String, (usize, usize)> {
    let (d, ff) = (config.hidden_size, config.intermediate_size);
    let (qw, kw) = (
        config.num_heads * config.head_dim,
        config.num_kv_heads * config.head_dim,
    );
    let mut out = BTreeMap::new();
    for l in 0..config.num_layers {
        for (part, shape) in [
            ("attn_q", (qw, d)),
            ("attn_k", (kw, d)),
            ("attn_v", (kw, d)),
            ("attn_output", (d, qw)),
            ("ffn_gate", (ff, d)),
            ("ffn_up", (ff, d)),
            ("ffn_down", (d, ff)),
        ] {
            out.insert(format!("blk.{l}.{part}.weight"), shape);
        }
    }
    if !config.tie_word_embeddings {
        out.insert("output.weight".into(), (config.vocab_size, d));
    }
    out
}

impl WeightProvider for ModelWeights<'_> {
    fn tensor(&mut self, name: &str, dims: &[usize]) -> Result<Vec<f32>> {
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
        let mut values = self.weights.to_f32(&file_name)?;
        if let Some(gguf) = gguf_name(name) {
            for term in self.adapters.terms(&gguf) {
                term.merge_into(&mut values);
            }
        }
        Ok(values)
    }
}

/// The configuration of a llama.cpp GGUF file, from its `{arch}.*` metadata keys.
fn config_from_gguf(meta: &Metadata, vocab_size: usize, tied: bool) -> Result<ModelConfig> {
    let arch = meta.get_str("general.architecture")?;
    let family = match arch {
        "llama" => Family::Llama,
        "qwen2" => Family::Qwen2,
        "qwen3" => Family::Qwen3,
        other => {
            return Err(WispError::InvalidModel(format!(
                "GGUF general.architecture is '{other}'; supported: llama, qwen2, qwen3"
            )))
        }
    };
    let key = |k: &str| format!("{arch}.{k}");
    let usize_of = |k: &str| meta.get_u32(&key(k)).map(|v| v as usize);
    let hidden_size = usize_of("embedding_length")?;
    let num_heads = usize_of("attention.head_count")?;
    let head_dim = match usize_of("attention.key_length") {
        Ok(v) => v,
        Err(_) if num_heads > 0 => hidden_size / num_heads,
        Err(e) => return Err(e),
    };
    let config = ModelConfig {
        family,
        hidden_size,
        intermediate_size: usize_of("feed_forward_length")?,
        num_heads,
        num_kv_heads: usize_of("attention.head_count_kv").unwrap_or(num_heads),
        head_dim,
        num_layers: usize_of("block_count")?,
        vocab_size,
        rms_norm_eps: meta.get_f32(&key("attention.layer_norm_rms_epsilon"))?,
        rope_theta: meta.get_f32(&key("rope.freq_base")).unwrap_or(10_000.0),
        tie_word_embeddings: tied,
        attention_bias: family == Family::Qwen2,
        qk_norm: family == Family::Qwen3,
        // llama.cpp permutes the q and k rows of Llama models so that rotary pairs are adjacent; the
        // dot products are unchanged if the rotation pairs them the same way.
        rope_style: if family == Family::Llama {
            RopeStyle::Interleaved
        } else {
            RopeStyle::Halves
        },
        max_position_embeddings: usize_of("context_length").unwrap_or(2048),
    };
    config.validate()?;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::gguf_name;

    #[test]
    fn hugging_face_names_map_to_llama_cpp_names() {
        assert_eq!(
            gguf_name("model.embed_tokens.weight").as_deref(),
            Some("token_embd.weight")
        );
        assert_eq!(
            gguf_name("model.layers.11.self_attn.k_proj.bias").as_deref(),
            Some("blk.11.attn_k.bias")
        );
        assert_eq!(
            gguf_name("model.layers.0.mlp.down_proj.weight").as_deref(),
            Some("blk.0.ffn_down.weight")
        );
        assert_eq!(
            gguf_name("model.layers.3.self_attn.q_norm.weight").as_deref(),
            Some("blk.3.attn_q_norm.weight")
        );
        assert_eq!(gguf_name("model.layers.x"), None);
        assert_eq!(gguf_name("something.else"), None);
    }
}
