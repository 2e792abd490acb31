//! When to stop generating: an end-of-sequence token, the token budget, or a stop string, which may arrive
//! split over several tokens. Text that could still be the start of a stop string is held back until it
//! is either completed (and dropped with the stop string) or ruled out (and released).

use serde::{Deserialize, Serialize};

use crate::error::{Result, WispError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// A stop string was generated.
    Stop,
    /// The token budget ran out.
    Length,
    /// The model generated an end-of-sequence token.
    EosToken,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StopConditions {
    /// Tokens that end the generation; their own text is never shown.
    pub eos_token_ids: Vec<u32>,
    /// At least 1.
    pub max_new_tokens: usize,
    /// Strings that end the generation; neither they nor what follows them is shown.
    pub stop_strings: Vec<String>,
}

/// What one token brought: the text that may be shown now, and whether the generation is over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopStep {
    pub text: String,
    pub finish: Option<FinishReason>,
}

pub struct StopChecker {
    conditions: StopConditions,
    generated: usize,
    /// Text not shown yet: its end might be the start of a stop string.
    held: String,
}

impl StopChecker {
    pub fn new(conditions: StopConditions) -> Result<Self> {
        if conditions.max_new_tokens == 0 {
            return Err(WispError::InvalidRequest(
                "max_new_tokens must be at least 1".into(),
            ));
        }
        if let Some(i) = conditions.stop_strings.iter().position(String::is_empty) {
            return Err(WispError::InvalidRequest(format!(
                "stop_strings[{i}] is empty"
            )));
        }
        Ok(StopChecker {
            conditions,
            generated: 0,
            held: String::new(),
        })
    }

    /// Takes the next generated token and its text (from the detokenizer). Once `finish` is set, the
    /// generation is over and the checker should not be pushed again.
    pub fn push(&mut self, token: u32, text: &str) -> StopStep {
        self.generated += 1;
        if self.conditions.eos_token_ids.contains(&token) {
            // No more text will come, so what was held can no longer become a stop string.
            return self.finish(FinishReason::EosToken);
        }
        self.held.push_str(text);
        if let Some(at) = self.first_stop() {
            self.held.truncate(at);
            return self.finish(FinishReason::Stop);
        }
        if self.generated >= self.conditions.max_new_tokens {
            return self.finish(FinishReason::Length);
        }
        let rest = self.held.split_off(self.partial_stop_start());
        StopStep {
            text: std::mem::replace(&mut self.held, rest),
            finish: None,
        }
    }

    /// How many more tokens the budget allows.
    pub fn remaining_tokens(&self) -> usize {
        self.conditions
            .max_new_tokens
            .saturating_sub(self.generated)
    }

    /// The held text, for a generation that ends for another reason (cancelled, context full).
    pub fn flush(&mut self) -> String {
        std::mem::take(&mut self.held)
    }

    fn finish(&mut self, reason: FinishReason) -> StopStep {
        StopStep {
            text: self.flush(),
            finish: Some(reason),
        }
    }

    /// Where the earliest stop string in the held text begins. Released text never held the start of
    /// one, so the held text is the only place to look.
    fn first_stop(&self) -> Option<usize> {
        self.conditions
            .stop_strings
            .iter()
            .filter_map(|s| self.held.find(s.as_str()))
            .min()
    }

    /// Where the longest tail of the held text that is a proper prefix of a stop string begins (the end
    /// of the text when there is none): everything before it can be shown.
    fn partial_stop_start(&self) -> usize {
        let held = self.held.as_str();
        held.char_indices()
            .map(|(i, _)| i)
            .find(|&i| {
                self.conditions
                    .stop_strings
                    .iter()
                    .any(|s| s.starts_with(&held[i..]))
            })
            .unwrap_or(held.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checker(max_new_tokens: usize, stop_strings: &[&str]) -> StopChecker {
        StopChecker::new(StopConditions {
            eos_token_ids: vec![0, 9],
            max_new_tokens,
            stop_strings: stop_strings.iter().map(|s| s.to_string()).collect(),
        })
        .unwrap()
    }

    /// Pushes each piece as token 1, returning the text of every step and the finish reason.
    fn run(c: &mut StopChecker, pieces: &[&str]) -> (Vec<String>, Option<FinishReason>) {
        let mut texts = Vec::new();
        for piece in pieces {
            let step = c.push(1, piece);
            texts.push(step.text);
            if step.finish.is_some() {
                return (texts, step.finish);
            }
        }
        (texts, None)
    }

    #[test]
    fn eos_token_stops_and_releases_held_text() {
        let mut c = checker(100, &["END"]);
        assert_eq!(
            c.push(5, "Hello E"),
            StopStep {
                text: "Hello ".into(),
                finish: None
            }
        );
        assert_eq!(
            c.push(9, "<|im_end|>"),
            StopStep {
                text: "E".into(),
                finish: Some(FinishReason::EosToken)
            }
        );
    }

    #[test]
    fn token_budget_stops_with_length() {
        let mut c = checker(3, &["END"]);
        let (texts, finish) = run(&mut c, &["a", "b", "cE", "d"]);
        assert_eq!(texts, ["a", "b", "cE"]);
        assert_eq!(finish, Some(FinishReason::Length));
    }

    #[test]
    fn stop_string_split_over_tokens_is_never_shown() {
        let mut c = checker(100, &["</answer>"]);
        let (texts, finish) = run(
            &mut c,
            &["The answer", "</", "ans", "wer", "> more", "never"],
        );
        assert_eq!(texts, ["The answer", "", "", "", ""]);
        assert_eq!(finish, Some(FinishReason::Stop));
        // Text before the stop string in the same token is shown.
        let mut c = checker(100, &["</answer>"]);
        let (texts, finish) = run(&mut c, &["4</", "answer>2"]);
        assert_eq!(texts, ["4", ""]);
        assert_eq!(finish, Some(FinishReason::Stop));
    }

    #[test]
    fn held_text_is_released_once_it_cannot_become_a_stop_string() {
        let mut c = checker(100, &["</answer>"]);
        let (texts, finish) = run(&mut c, &["a </", "an", "d b", "</a"]);
        assert_eq!(texts, ["a ", "", "</and b", ""]);
        assert_eq!(finish, None);
        assert_eq!(c.flush(), "</a");
        // A stop string overlapping a false start: "ab" + "abc".
        let mut c = checker(100, &["abc"]);
        let (texts, finish) = run(&mut c, &["xab", "abc"]);
        assert_eq!(texts, ["x", "ab"]);
        assert_eq!(finish, Some(FinishReason::Stop));
        let mut c = checker(100, &["ab"]);
        assert_eq!(run(&mut c, &["a", "a"]).0, ["", "a"]);
    }

    #[test]
    fn earliest_stop_string_wins_and_multibyte_text_is_cut_on_characters() {
        let mut c = checker(100, &["world", "lo"]);
        let (texts, finish) = run(&mut c, &["hello world"]);
        assert_eq!(texts, ["hel"]);
        assert_eq!(finish, Some(FinishReason::Stop));
        let mut c = checker(100, &["🙂!"]);
        assert_eq!(run(&mut c, &["x🙂", "?é"]).0, ["x", "🙂?é"]);
    }

    #[test]
    fn invalid_conditions_are_rejected() {
        let err = StopChecker::new(StopConditions {
            eos_token_ids: vec![],
            max_new_tokens: 0,
            stop_strings: vec![],
        })
        .err()
        .unwrap();
        assert_eq!(err.code(), "INVALID_REQUEST");
        assert!(err.to_string().contains("max_new_tokens"));
        let err = StopChecker::new(StopConditions {
            eos_token_ids: vec![],
            max_new_tokens: 5,
            stop_strings: vec!["ok".into(), "".into()],
        })
        .err()
        .unwrap();
        assert_eq!(err.code(), "INVALID_REQUEST");
        assert!(err.to_string().contains("stop_strings[1]"));
    }

    #[test]
    fn finish_reason_serializes_in_lowercase() {
        let json = serde_json::to_string(&[
            FinishReason::Stop,
            FinishReason::Length,
            FinishReason::EosToken,
        ])
        .unwrap();
        assert_eq!(json, r#"["stop","length","eos_token"]"#);
        assert_eq!(
            serde_json::from_str::<FinishReason>(r#""eos_token""#).unwrap(),
            FinishReason::EosToken
        );
    }
}
