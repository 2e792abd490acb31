//! Token ids to text as they come, UTF-8 safe, decoding only a few tokens per step.
//!
//! Byte-level BPE can split one character over several tokens, and `tokenizers` decodes the incomplete
//! bytes as U+FFFD. In the manner of Hugging Face TGI's `decode_token`, each step decodes a short window
//! twice: the tokens whose text was last released (context for decoders whose output depends on what
//! precedes, such as a leading-space rule) with and without the pending ones after them. The new text is
//! the difference, released only when it does not end with U+FFFD; a U+FFFD inside it (a genuine one, or
//! bytes that can never form a character) passes through.

use crate::error::Result;
use crate::text::Tokenizer;

/// Tokens of the prompt kept as the first window's context.
const CONTEXT_TOKENS: usize = 5;

/// The tokenizer is passed to each call rather than held, so that a generation can keep its stream
/// between calls from JavaScript without borrowing the model.
pub struct TextStream {
    /// Context tokens (text already released), then pending ones (text not released yet).
    window: Vec<u32>,
    context_len: usize,
}

impl TextStream {
    /// `prompt` is what precedes the first generated token; its last few tokens give the decoder context.
    /// It may be empty.
    pub fn new(prompt: &[u32]) -> Self {
        let window = prompt[prompt.len().saturating_sub(CONTEXT_TOKENS)..].to_vec();
        TextStream {
            context_len: window.len(),
            window,
        }
    }

    /// The text that `token` completes: empty while it ends in the middle of a character.
    pub fn push(&mut self, tokenizer: &Tokenizer, token: u32) -> Result<String> {
        self.window.push(token);
        self.release(tokenizer, false)
    }

    /// Whatever is still pending, incomplete characters as U+FFFD: the end of the generation.
    pub fn finish(&mut self, tokenizer: &Tokenizer) -> Result<String> {
        self.release(tokenizer, true)
    }

    fn release(&mut self, tokenizer: &Tokenizer, incomplete_too: bool) -> Result<String> {
        let context = tokenizer.decode(&self.window[..self.context_len])?;
        let text = tokenizer.decode(&self.window)?;
        // Byte-level decoding only appends to the context's text, but a decoder that cleans up spaces
        // could shift it; then wait for a length that falls on a character boundary.
        let delta = match text.get(context.len()..) {
            Some(delta)
                if !delta.is_empty() && (incomplete_too || !delta.ends_with('\u{FFFD}')) =>
            {
                delta
            }
            _ => return Ok(String::new()),
        };
        // The tokens just released are the next step's context; older ones are no longer needed.
        self.window.drain(..self.context_len);
        self.context_len = self.window.len();
        Ok(delta.to_string())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use super::*;
    use crate::generate::{FinishReason, StopChecker, StopConditions};

    fn qwen3() -> &'static Tokenizer {
        static TOKENIZER: OnceLock<Tokenizer> = OnceLock::new();
        TOKENIZER.get_or_init(|| {
            let path = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/tokenizers/qwen3.tokenizer.json"
            );
            Tokenizer::from_json(&std::fs::read(path).unwrap()).unwrap()
        })
    }

    /// The delta of every token, then what `finish` released.
    fn stream(prompt: &[u32], ids: &[u32]) -> (Vec<String>, String) {
        let mut s = TextStream::new(prompt);
        let deltas = ids.iter().map(|&id| s.push(qwen3(), id).unwrap()).collect();
        (deltas, s.finish(qwen3()).unwrap())
    }

    const MIXED: &str = "Hello, world! 😀👍🏽 🦀 family: 👨‍👩‍👧 flag: 🇫🇷\n日本語のテキストと中文, 한국어; \
                         e\u{301}cole, n\u{303}, Z\u{324}\u{354}\u{367}\u{311}\u{343}; a real \u{FFFD} inside; 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𓀀.";

    #[test]
    fn deltas_add_up_to_the_full_decode_and_never_retract() {
        let tok = qwen3();
        let ids = tok.encode(MIXED).unwrap();
        // Qwen's normalizer composes characters (NFC), so the decode is the reference, not the input.
        let full = tok.decode(&ids).unwrap();
        assert!(full.contains("\u{e9}cole") && full.contains("a real \u{FFFD} inside"));
        let (deltas, rest) = stream(&[], &ids);
        assert_eq!(rest, "");
        let mut shown = String::new();
        for delta in &deltas {
            shown.push_str(delta);
            assert!(
                full.starts_with(&shown),
                "{shown:?} is not a prefix of the text"
            );
        }
        assert_eq!(shown, full);
        // Some characters are split over tokens, so some tokens released nothing.
        assert!(ids
            .iter()
            .any(|&id| tok.decode(&[id]).unwrap().contains('\u{FFFD}')));
        assert!(deltas.iter().any(String::is_empty));
    }

    #[test]
    fn prompt_context_continues_the_text() {
        let tok = qwen3();
        let prompt = tok.encode("<|im_start|>assistant\nSure: 中文").unwrap();
        let generated = tok.encode(" 𝔘𝔫𝔦 and 😀 done<|im_end|>").unwrap();
        let (deltas, rest) = stream(&prompt, &generated);
        let all: Vec<u32> = prompt.iter().chain(&generated).copied().collect();
        assert_eq!(
            tok.decode(&prompt).unwrap() + &deltas.concat() + &rest,
            tok.decode(&all).unwrap()
        );
        assert_eq!(deltas.concat(), " 𝔘𝔫𝔦 and 😀 done<|im_end|>");
    }

    #[test]
    fn incomplete_character_at_the_end_comes_out_of_finish() {
        let tok = qwen3();
        let ids = tok.encode("ok 𓀀").unwrap();
        let cut = &ids[..ids.len() - 1];
        let (deltas, rest) = stream(&[], cut);
        assert!(!deltas.concat().contains('\u{FFFD}'));
        assert!(rest.ends_with('\u{FFFD}'));
        assert_eq!(deltas.concat() + &rest, tok.decode(cut).unwrap());
        // A genuine U+FFFD at the very end waits for `finish` too, and is not lost.
        let ids = tok.encode("ok \u{FFFD}").unwrap();
        let (deltas, rest) = stream(&[], &ids);
        assert_eq!(deltas.concat() + &rest, "ok \u{FFFD}");
    }

    /// Feeds generated tokens through the stream and the stop checker as the generation loop will.
    fn generate(text: &str, stop: &str) -> (Vec<String>, Option<FinishReason>) {
        let tok = qwen3();
        let mut s = TextStream::new(&[]);
        let mut c = StopChecker::new(StopConditions {
            eos_token_ids: vec![tok.token_id("<|im_end|>").unwrap()],
            max_new_tokens: 1000,
            stop_strings: vec![stop.to_string()],
        })
        .unwrap();
        let mut shown = Vec::new();
        for id in tok.encode(text).unwrap() {
            let step = c.push(id, &s.push(tok, id).unwrap());
            shown.push(step.text);
            if step.finish.is_some() {
                return (shown, step.finish);
            }
        }
        shown.push(c.flush() + &s.finish(tok).unwrap());
        (shown, None)
    }

    #[test]
    fn stop_string_spanning_tokens_is_cut_from_the_stream() {
        let stop = "</answer>";
        assert!(
            qwen3().encode(stop).unwrap().len() > 1,
            "the stop string should span tokens"
        );
        let (shown, finish) = generate("Sure: 42 😀</answer> and then more", stop);
        assert_eq!(finish, Some(FinishReason::Stop));
        let mut prefix = String::new();
        for text in &shown {
            prefix.push_str(text);
            assert!("Sure: 42 😀".starts_with(&prefix), "{prefix:?}");
        }
        assert_eq!(prefix, "Sure: 42 😀");
        // False starts are released in full.
        let text = "a </b> and </answ b";
        let (shown, finish) = generate(&format!("{text}<|im_end|>"), stop);
        assert_eq!(finish, Some(FinishReason::EosToken));
        assert_eq!(shown.concat(), text);
    }
}
