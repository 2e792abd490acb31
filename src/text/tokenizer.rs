//! The model's tokenizer, run by Hugging Face `tokenizers`: from a `tokenizer.json`, or rebuilt from a
//! GGUF file's `tokenizer.ggml.*` metadata the way Hugging Face transformers rebuilds it.

use serde_json::{json, Map, Value};

use crate::error::{Result, WispError};
use crate::weights::gguf::Metadata;

/// Pre-tokenizer split patterns of the byte-level vocabularies, by `tokenizer.ggml.pre`.
const LLAMA3_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

fn split_for(pre: &str) -> Option<&'static str> {
    match pre {
        "llama3" | "llama-v3" | "llama-bpe" | "smaug-bpe" | "dbrx" | "falcon3" => {
            Some(LLAMA3_SPLIT)
        }
        "qwen2" | "deepseek-r1-qwen" => Some(QWEN2_SPLIT),
        _ => None,
    }
}

/// Cheap to clone: the grammar environment shares the model's tokenizer.
#[derive(Clone)]
pub struct Tokenizer {
    inner: std::sync::Arc<tokenizers::Tokenizer>,
}

fn invalid(why: String) -> WispError {
    WispError::InvalidModel(format!("tokenizer: {why}"))
}

impl Tokenizer {
    /// Reads a Hugging Face `tokenizer.json`.
    pub fn from_json(bytes: &[u8]) -> Result<Self> {
        let inner = tokenizers::Tokenizer::from_bytes(bytes)
            .map_err(|e| invalid(format!("tokenizer.json: {e}")))?;
        Ok(Tokenizer {
            inner: std::sync::Arc::new(inner),
        })
    }

    /// Rebuilds a byte-level BPE tokenizer (`tokenizer.ggml.model` = "gpt2": Llama 3, SmolLM2, Qwen) from
    /// GGUF metadata: vocabulary, merges, control tokens as special tokens, and the split pattern named by
    /// `tokenizer.ggml.pre`.
    pub fn from_gguf(meta: &Metadata) -> Result<Self> {
        let model = meta.get_str("tokenizer.ggml.model")?;
        if model != "gpt2" {
            return Err(invalid(format!(
                "GGUF tokenizer.ggml.model is '{model}'; only byte-level BPE ('gpt2') is supported, give a tokenizer.json"
            )));
        }
        let tokens = meta.get_str_array("tokenizer.ggml.tokens")?;
        let merges = meta.get_str_array("tokenizer.ggml.merges")?;
        let types = meta
            .get_i64_array("tokenizer.ggml.token_type")
            .unwrap_or_default();
        let mut vocab = Map::with_capacity(tokens.len());
        for (id, token) in tokens.iter().enumerate() {
            vocab.insert((*token).to_string(), json!(id));
        }
        // 3 = control (special, like <|im_end|>), 4 = user-defined (matched whole, not special).
        let added: Vec<Value> = types
            .iter()
            .zip(tokens)
            .enumerate()
            .filter(|(_, (&t, _))| t == 3 || t == 4)
            .map(|(id, (&t, token))| {
                json!({"id": id, "content": token, "single_word": false, "lstrip": false, "rstrip": false,
                       "normalized": false, "special": t == 3})
            })
            .collect();
        let pre = meta.get_str("tokenizer.ggml.pre").unwrap_or("default");
        let pre_tokenizer = match split_for(pre) {
            Some(pattern) => json!({"type": "Sequence", "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": false},
                {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]}),
            None => {
                json!({"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true})
            }
        };
        let doc = json!({
            "version": "1.0", "truncation": null, "padding": null, "added_tokens": added,
            "normalizer": null, "pre_tokenizer": pre_tokenizer, "post_processor": null,
            "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
            "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
                      "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,
                      "ignore_merges": false, "vocab": vocab, "merges": merges},
        });
        let bytes = serde_json::to_vec(&doc).map_err(|e| invalid(e.to_string()))?;
        Self::from_json(&bytes)
    }

    /// Token ids of `text`; special tokens written in the text (`<|im_start|>`) become their ids.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let encoding = self
            .inner
            .encode(text, false)
            .map_err(|e| invalid(format!("encode: {e}")))?;
        Ok(encoding.get_ids().to_vec())
    }

    /// The text of `ids`, special tokens included.
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.inner
            .decode(ids, false)
            .map_err(|e| invalid(format!("decode: {e}")))
    }

    /// The tokenizer as Hugging Face's `tokenizer.json` (for one built from GGUF metadata too).
    pub fn to_json(&self) -> Result<Value> {
        let text = self
            .inner
            .to_string(false)
            .map_err(|e| invalid(format!("serialize: {e}")))?;
        serde_json::from_str(&text).map_err(|e| invalid(format!("serialize: {e}")))
    }

    pub fn token_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// Size of the vocabulary, added tokens included.
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// The added tokens' texts (`<|im_start|>`, `<tool_call>`...): the tokenizer turns these into their
    /// ids wherever they appear, so text from outside must not carry them (see `ChatTemplate::protect`).
    pub fn added_tokens(&self) -> Vec<String> {
        self.inner
            .get_added_tokens_decoder()
            .into_iter()
            .map(|(_, token)| token.content)
            .collect()
    }

    /// Checks that every token id the tokenizer can produce has a row in a model of `vocab_size` tokens,
    /// so that a tokenizer meant for another model fails at load (`INVALID_MODEL`), not mid-prompt.
    pub fn check_fits(&self, vocab_size: usize) -> Result<()> {
        let largest = self
            .inner
            .get_vocab(true)
            .into_iter()
            .max_by_key(|(_, id)| *id);
        match largest {
            Some((token, id)) if id as usize >= vocab_size => Err(invalid(format!(
                "token {token:?} has id {id}, but the model's vocabulary has {vocab_size} rows: \
                 the tokenizer does not belong to these weights"
            ))),
            _ => Ok(()),
        }
    }
}
