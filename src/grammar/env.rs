//! The model's vocabulary as llguidance sees it, with its grammar compiler.

use std::sync::Arc;

use llguidance::api::TopLevelGrammar;
use llguidance::{ParserFactory, TokenParser};
use toktrie::{TokRxInfo, TokTrie, TokenId, TokenizerEnv};

use super::lark_string;
use crate::error::{Result, WispError};
use crate::text::Tokenizer;

/// llguidance's view of the tokenizer: the trie of token bytes, and the model's own tokenizer for text.
/// Being canonical (the tokens the model was trained on) lets llguidance compute the tokens a grammar
/// forces (`Matcher::compute_ff_tokens`): the forced text as the tokenizer writes it, minus a last token
/// that the next bytes could still merge into.
struct ModelTokEnv {
    trie: TokTrie,
    tokenizer: Tokenizer,
}

impl TokenizerEnv for ModelTokEnv {
    fn tok_trie(&self) -> &TokTrie {
        &self.trie
    }

    /// The tokenizer's ids for UTF-8 text; bytes that are not (a character cut in two) get the trie's
    /// longest matches, as llguidance's approximate environment does.
    fn tokenize_bytes(&self, s: &[u8]) -> Vec<TokenId> {
        std::str::from_utf8(s)
            .ok()
            .and_then(|text| self.tokenizer.encode(text).ok())
            .unwrap_or_else(|| self.trie.greedy_tokenize(s))
    }

    fn tokenize_is_canonical(&self) -> bool {
        true
    }
}

/// Built once per model and shared by everything it constrains (an agent's tool calls, a
/// `response_format`), since building the token trie walks the whole vocabulary: 1.6-3.9 s on a Qwen3-size
/// vocabulary.
pub struct GrammarEnv {
    factory: ParserFactory,
    eos: Vec<u32>,
}

impl GrammarEnv {
    /// `vocab_size` is the model's (the logits' length, which may exceed the tokenizer's); `eos` the
    /// tokens that end the message, at least one.
    pub fn new(tokenizer: &Tokenizer, vocab_size: usize, eos: &[u32]) -> Result<Self> {
        let Some(&first_eos) = eos.first() else {
            return Err(WispError::InvalidModel(
                "constrained decoding needs an end-of-turn token".into(),
            ));
        };
        let mut words = llguidance::token_bytes_from_tokenizer_json(&tokenizer.to_json()?)
            .map_err(|e| WispError::InvalidModel(format!("tokenizer: {e}")))?;
        words.resize(words.len().max(vocab_size), Vec::new());
        for &id in eos {
            let word = words.get_mut(id as usize).ok_or_else(|| {
                WispError::InvalidModel(format!("end-of-turn token {id} is outside the vocabulary"))
            })?;
            // llguidance only lets special tokens (marked with 0xFF) end a message; an end token the
            // tokenizer does not call special must not count as text either.
            if word.first() != Some(&TokTrie::SPECIAL_TOKEN_MARKER) {
                let mut marked = vec![TokTrie::SPECIAL_TOKEN_MARKER];
                marked.extend_from_slice(format!("<|wisp_eos_{id}|>").as_bytes());
                *word = marked;
            }
        }
        let info = TokRxInfo::new(words.len() as u32, first_eos);
        let trie = TokTrie::from(&info, &words).with_eos_tokens(eos);
        let env: Arc<dyn TokenizerEnv + Sync> = Arc::new(ModelTokEnv {
            trie,
            tokenizer: tokenizer.clone(),
        });
        let mut factory = ParserFactory::new_simple(&env)
            .map_err(|e| WispError::InvalidModel(format!("grammar environment: {e}")))?;
        // Problems come back as errors; nothing should go to stderr (which is nowhere on the web).
        factory.quiet().set_stderr_log_level(0);
        Ok(GrammarEnv {
            factory,
            eos: eos.to_vec(),
        })
    }

    /// The tokens that end the message.
    pub fn eos(&self) -> &[u32] {
        &self.eos
    }

    /// Compiles a Lark grammar; `error` makes the coded error of a grammar that does not compile.
    pub(crate) fn parser(
        &self,
        lark: String,
        error: fn(String) -> WispError,
    ) -> Result<TokenParser> {
        self.factory
            .create_parser(TopLevelGrammar::from_lark(lark))
            .map_err(|e| error(e.to_string()))
    }

    fn trie(&self) -> &TokTrie {
        self.factory.tok_env().tok_trie()
    }

    /// Whether the tokenizer has a special token by this name (whose bytes cannot be produced as text).
    pub fn is_special(&self, tag: &str) -> bool {
        self.trie().get_special_token(tag).is_some()
    }

    /// How a grammar writes a tag: as the special token when the tokenizer has one by that name, else as
    /// text.
    pub fn tag(&self, tag: &str) -> String {
        if self.is_special(tag) {
            tag.to_string()
        } else {
            lark_string(tag)
        }
    }
}
