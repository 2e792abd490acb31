//! A model's weights as the graph builder asks for them (Hugging Face tensor names and layouts), from a
//! GGUF file or from safetensors plus `config.json`.

use crate::error::{Result, WispError};
use crate::graph::WeightProvider;
use crate::model::{Family, ModelConfig, RopeStyle};
use crate::weights::gguf::Metadata;
use crate::weights::Weights;

pub struct ModelWeights<'a> {
    pub(crate) weights: Weights<'a>,
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
    /// Reads a GGUF file (configuration from its metadata), or safetensors with its `config.json`.
    pub fn load(bytes: &'a [u8], config_json: Option<&str>) -> Result<(ModelConfig, Self)> {
        let weights = Weights::parse(bytes)?;
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
        Ok((config, ModelWeights { weights }))
    }

    /// GGUF metadata (the tokenizer and chat template live there), if the file is GGUF.
    pub fn metadata(&self) -> Option<&Metadata<'a>> {
        self.weights.metadata()
    }
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
        self.weights.to_f32(&file_name)
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
