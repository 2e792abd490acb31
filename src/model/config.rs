//! The decoder architectures Wisp runs: Llama / SmolLM2, Qwen2 / 2.5 (q, k, v biases) and Qwen3 (per-head
//! q and k norms), with grouped-query attention and tied or untied embeddings.

use serde::{Deserialize, Serialize};

use crate::error::{Result, WispError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    Llama,
    Qwen2,
    Qwen3,
}

/// How rotary embeddings pair the dimensions of a head.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RopeStyle {
    /// Hugging Face's `rotate_half`: dimension i pairs with i + head_dim / 2.
    Halves,
    /// GPT-J / llama.cpp's Llama layout: dimension 2i pairs with 2i + 1.
    Interleaved,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelConfig {
    pub family: Family,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_heads: usize,
    pub num_kv_heads: usize,
    pub head_dim: usize,
    pub num_layers: usize,
    pub vocab_size: usize,
    pub rms_norm_eps: f32,
    pub rope_theta: f32,
    pub tie_word_embeddings: bool,
    /// Whether q, k and v projections have biases (Qwen2).
    pub attention_bias: bool,
    /// Whether q and k get a per-head RMSNorm before the rotary embedding (Qwen3).
    pub qk_norm: bool,
    pub rope_style: RopeStyle,
    pub max_position_embeddings: usize,
}

/// The keys of a Hugging Face `config.json` that matter here.
#[derive(Deserialize)]
struct HfConfig {
    model_type: Option<String>,
    hidden_size: Option<usize>,
    intermediate_size: Option<usize>,
    num_attention_heads: Option<usize>,
    num_key_value_heads: Option<usize>,
    head_dim: Option<usize>,
    num_hidden_layers: Option<usize>,
    vocab_size: Option<usize>,
    rms_norm_eps: Option<f32>,
    rope_theta: Option<f32>,
    tie_word_embeddings: Option<bool>,
    attention_bias: Option<bool>,
    max_position_embeddings: Option<usize>,
    rope_scaling: Option<serde_json::Value>,
}

fn field<T>(value: Option<T>, name: &str) -> Result<T> {
    value.ok_or_else(|| WispError::InvalidModel(format!("config field '{name}' is missing")))
}

impl ModelConfig {
    /// Reads a Hugging Face `config.json`.
    pub fn from_hf_json(json: &str) -> Result<Self> {
        let hf: HfConfig = serde_json::from_str(json)
            .map_err(|e| WispError::InvalidModel(format!("config.json: {e}")))?;
        let model_type = field(hf.model_type, "model_type")?;
        let family = match model_type.as_str() {
            "llama" | "mistral" => Family::Llama,
            "qwen2" => Family::Qwen2,
            "qwen3" => Family::Qwen3,
            other => {
                return Err(WispError::InvalidModel(format!(
                "config field 'model_type' is '{other}'; supported: llama, mistral, qwen2, qwen3"
            )))
            }
        };
        if let Some(scaling) = hf.rope_scaling.filter(|v| !v.is_null()) {
            return Err(WispError::InvalidModel(format!(
                "config field 'rope_scaling' ({scaling}) is not supported"
            )));
        }
        let hidden_size = field(hf.hidden_size, "hidden_size")?;
        let num_heads = field(hf.num_attention_heads, "num_attention_heads")?;
        let config = ModelConfig {
            family,
            hidden_size,
            intermediate_size: field(hf.intermediate_size, "intermediate_size")?,
            num_heads,
            num_kv_heads: hf.num_key_value_heads.unwrap_or(num_heads),
            head_dim: hf
                .head_dim
                .unwrap_or(hidden_size.checked_div(num_heads).unwrap_or(0)),
            num_layers: field(hf.num_hidden_layers, "num_hidden_layers")?,
            vocab_size: field(hf.vocab_size, "vocab_size")?,
            rms_norm_eps: hf.rms_norm_eps.unwrap_or(1e-6),
            rope_theta: hf.rope_theta.unwrap_or(10_000.0),
            tie_word_embeddings: hf.tie_word_embeddings.unwrap_or(false),
            attention_bias: hf.attention_bias.unwrap_or(family == Family::Qwen2),
            qk_norm: family == Family::Qwen3,
            rope_style: RopeStyle::Halves,
            max_position_embeddings: hf.max_position_embeddings.unwrap_or(2048),
        };
        config.validate()?;
        Ok(config)
    }

    /// Checks the sizes the graph builder relies on; the error names the field.
    pub fn validate(&self) -> Result<()> {
        let fail = |name: &str, why: String| {
            Err(WispError::InvalidModel(format!(
                "config field '{name}' {why}"
            )))
        };
        for (name, v) in [
            ("hidden_size", self.hidden_size),
            ("intermediate_size", self.intermediate_size),
            ("num_attention_heads", self.num_heads),
            ("num_key_value_heads", self.num_kv_heads),
            ("head_dim", self.head_dim),
            ("num_hidden_layers", self.num_layers),
            ("vocab_size", self.vocab_size),
        ] {
            if v == 0 {
                return fail(name, "must be positive".into());
            }
            // wonnx's matrix kernels work on blocks of 2x2 or larger.
            if name != "num_hidden_layers"
                && name != "num_attention_heads"
                && name != "num_key_value_heads"
                && v % 2 != 0
            {
                return fail(name, format!("is {v}; it must be even"));
            }
        }
        if !self.num_heads.is_multiple_of(self.num_kv_heads) {
            return fail(
                "num_key_value_heads",
                format!(
                    "({}) must divide num_attention_heads ({})",
                    self.num_kv_heads, self.num_heads
                ),
            );
        }
        if !(self.rms_norm_eps > 0.0 && self.rms_norm_eps.is_finite()) {
            return fail(
                "rms_norm_eps",
                format!(
                    "is {}; it must be a small positive number",
                    self.rms_norm_eps
                ),
            );
        }
        if !(self.rope_theta > 0.0 && self.rope_theta.is_finite()) {
            return fail(
                "rope_theta",
                format!("is {}; it must be positive", self.rope_theta),
            );
        }
        // The default context is capped by it: 0 would reach the decoder as a context of no tokens, which
        // is the caller's mistake (INVALID_REQUEST) only when the caller asked for it.
        if self.max_position_embeddings == 0 {
            return fail("max_position_embeddings", "must be positive".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LLAMA: &str = r#"{"model_type":"llama","hidden_size":64,"intermediate_size":128,
        "num_attention_heads":4,"num_key_value_heads":2,"num_hidden_layers":2,"vocab_size":256,
        "rms_norm_eps":1e-5,"rope_theta":10000.0,"tie_word_embeddings":true}"#;

    #[test]
    fn reads_a_llama_config() {
        let c = ModelConfig::from_hf_json(LLAMA).unwrap();
        assert_eq!(
            (
                c.family,
                c.head_dim,
                c.num_kv_heads,
                c.qk_norm,
                c.attention_bias
            ),
            (Family::Llama, 16, 2, false, false)
        );
    }

    #[test]
    fn errors_name_the_field() {
        let msg = |json: &str| ModelConfig::from_hf_json(json).unwrap_err().to_string();
        assert!(msg(&LLAMA.replace("\"hidden_size\":64,", "")).contains("'hidden_size' is missing"));
        assert!(msg(&LLAMA.replace("\"llama\"", "\"gpt2\"")).contains("'model_type' is 'gpt2'"));
        assert!(
            msg(&LLAMA.replace("\"num_key_value_heads\":2", "\"num_key_value_heads\":3"))
                .contains("'num_key_value_heads'")
        );
        assert!(
            msg(&LLAMA.replace("\"vocab_size\":256", "\"vocab_size\":257"))
                .contains("'vocab_size' is 257; it must be even")
        );
        assert!(
            msg(&LLAMA.replace("\"rms_norm_eps\":1e-5", "\"rms_norm_eps\":0"))
                .contains("'rms_norm_eps'")
        );
        assert!(msg(&LLAMA.replace(
            "\"rope_theta\"",
            "\"max_position_embeddings\":0,\"rope_theta\""
        ))
        .contains("'max_position_embeddings' must be positive"));
        assert!(msg("{not json").starts_with("invalid model: config.json"));
    }
}
