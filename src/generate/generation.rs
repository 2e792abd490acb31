//! One generation, stepped by its caller: prefill the prompt (reusing the cached prefix), then one token
//! per `step`. Stepping from outside lets JavaScript stream each delta and stop between steps; whatever
//! was fed to the model stays in the cache, so a stopped generation leaves the model usable. Each pass
//! may carry draft tokens (`speculation.rs`).

use serde::Serialize;

use super::speculation::Speculation;
use super::{
    FinishReason, LogitsProcessor, Sampler, SamplingParams, StopChecker, StopConditions, TextStream,
};
use crate::backend::Decoder;
use crate::error::{Result, WispError};
use crate::profile::now_ms;
use crate::text::Tokenizer;

#[derive(Debug, Clone, PartialEq)]
pub struct GenerateOptions {
    pub sampling: SamplingParams,
    pub max_new_tokens: usize,
    pub stop: Vec<String>,
    /// Most draft tokens verified per pass; `None` lets the backend choose (see
    /// [`Decoder::draft_policy`]), `Some(0)` turns speculation off.
    pub draft_len: Option<usize>,
}

/// Token counts of a generation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub prompt_tokens: usize,
    /// Prompt tokens already in the cache from an earlier call (prefix reuse): not run again.
    pub cached_tokens: usize,
    pub completion_tokens: usize,
    /// Draft tokens run through the model, and how many of them were kept.
    pub draft_tokens: usize,
    pub accepted_draft_tokens: usize,
    /// Completion tokens a constraint forced (jump-forward): appended without sampling, run through the
    /// model in the same pass as the sampled token before them.
    pub forced_tokens: usize,
    /// Forward passes of the model (prefill chunks not counted separately).
    pub passes: usize,
}

/// What one step produced: the sampled token, the tokens a constraint forced after it, the text of both
/// that may be shown now, and whether the generation is over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    pub token: u32,
    pub forced: Vec<u32>,
    pub text: String,
    pub finish: Option<FinishReason>,
}

pub struct Generation {
    sampler: Sampler,
    stop: StopChecker,
    stream: TextStream,
    /// The logits after the last confirmed token: the next token is drawn from them.
    logits: Vec<f32>,
    speculation: Speculation,
    finish: Option<FinishReason>,
    usage: Usage,
}

impl Generation {
    /// Validates the options and prefills `prompt`, running only the tokens not already cached.
    pub async fn start(
        decoder: &mut Decoder,
        prompt: &[u32],
        eos_token_ids: &[u32],
        options: GenerateOptions,
        fallback_seed: u64,
    ) -> Result<Self> {
        if prompt.is_empty() {
            return Err(WispError::InvalidRequest("the prompt is empty".into()));
        }
        if prompt.len() >= decoder.capacity() {
            return Err(WispError::ContextOverflow(format!(
                "the prompt has {} tokens; the context holds {} including the answer",
                prompt.len(),
                decoder.capacity()
            )));
        }
        let sampler = Sampler::new(options.sampling, fallback_seed)?;
        let stop = StopChecker::new(StopConditions {
            eos_token_ids: eos_token_ids.to_vec(),
            max_new_tokens: options.max_new_tokens,
            stop_strings: options.stop,
        })?;
        let mut policy = decoder.draft_policy();
        if let Some(max_len) = options.draft_len {
            policy.max_len = max_len;
        }
        let cached = decoder.reuse_prefix(prompt);
        let logits = decoder.forward_last(&prompt[cached..]).await?;
        Ok(Generation {
            sampler,
            stop,
            stream: TextStream::new(prompt),
            logits,
            speculation: Speculation::new(policy),
            finish: None,
            usage: Usage {
                prompt_tokens: prompt.len(),
                cached_tokens: cached,
                passes: 1,
                ..Usage::default()
            },
        })
    }

    /// Constrains the tokens from the next step on (see `Sampler::add_processor`).
    pub fn add_processor(&mut self, processor: Box<dyn LogitsProcessor>) {
        self.sampler.add_processor(processor);
    }

    pub fn finish_reason(&self) -> Option<FinishReason> {
        self.finish
    }

    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// Picks the next token and, unless it ends the generation, runs it through the model.
    pub async fn step(&mut self, decoder: &mut Decoder, tokenizer: &Tokenizer) -> Result<Step> {
        if let Some(reason) = self.finish {
            return Err(WispError::InvalidRequest(format!(
                "the generation is over ({reason:?})"
            )));
        }
        let confirmed = decoder.len() - self.speculation.pending();
        let t = now_ms();
        let token = self
            .sampler
            .sample(&mut self.logits, &decoder.tokens()[..confirmed])?;
        let t = decoder.profile_mut().lap("sampling", t);
        let (mut text, mut finish) = self.push(tokenizer, token)?;
        let profile = decoder.profile_mut();
        profile.lap("detokenize_stop", t);
        profile.tokens_sampled += 1;
        let mut fed = vec![token];
        if finish.is_none() {
            for forced in self.sampler.jump_forward()? {
                if confirmed + fed.len() + 1 >= decoder.capacity() {
                    // No room to run it: the constraint is ahead of the model, so the generation ends.
                    text.push_str(&self.stop.flush());
                    finish = Some(FinishReason::Length);
                    break;
                }
                let (more, end) = self.push(tokenizer, forced)?;
                text.push_str(&more);
                fed.push(forced);
                self.usage.forced_tokens += 1;
                if end.is_some() {
                    finish = end;
                    break;
                }
            }
        }
        if finish.is_none() && confirmed + fed.len() >= decoder.capacity() {
            // The context is full: end as if the budget ran out.
            text.push_str(&self.stop.flush());
            finish = Some(FinishReason::Length);
        }
        match finish {
            None => self.advance(decoder, &fed).await?,
            Some(reason) => {
                self.drop_drafts(decoder)?;
                if reason == FinishReason::Length {
                    text.push_str(&self.stream.finish(tokenizer)?);
                }
            }
        }
        self.finish = finish;
        Ok(Step {
            token,
            forced: fed.split_off(1),
            text,
            finish,
        })
    }

    /// Counts a generated token and passes it through the detokenizer and the stop conditions.
    fn push(
        &mut self,
        tokenizer: &Tokenizer,
        token: u32,
    ) -> Result<(String, Option<FinishReason>)> {
        self.usage.completion_tokens += 1;
        let delta = self.stream.push(tokenizer, token)?;
        let step = self.stop.push(token, &delta);
        Ok((step.text, step.finish))
    }

    /// Puts `tokens` (the sampled one, then any forced ones) in the cache and the logits after the last in
    /// `self.logits`: from the drafts while they match, otherwise by one pass over the rest and fresh
    /// drafts.
    async fn advance(&mut self, decoder: &mut Decoder, tokens: &[u32]) -> Result<()> {
        let (matched, logits) = self.speculation.accept(tokens);
        self.usage.accepted_draft_tokens += matched;
        if let Some(logits) = logits {
            self.logits = logits;
        }
        let rest = &tokens[matched..];
        let Some(&last) = rest.last() else {
            return Ok(());
        };
        self.speculation.reject_rest(decoder)?;
        // Room left in the context and in the token budget after `rest`.
        let room = decoder
            .capacity()
            .saturating_sub(decoder.len() + rest.len() + 1)
            .min(self.stop.remaining_tokens().saturating_sub(1));
        let t = now_ms();
        // Drafts look up the history up to `last`; after forced tokens (not in the cache yet) none are
        // drafted: the pass already carries several tokens.
        let drafts = if rest.len() == 1 {
            self.speculation.propose(decoder.tokens(), last, room)
        } else {
            Vec::new()
        };
        decoder.profile_mut().lap("draft_lookup", t);
        if drafts.is_empty() {
            // Only the last token's logits are read: the head runs once for the forced tokens too.
            self.logits = decoder.forward_steps(rest).await?;
            self.speculation.store(drafts, std::iter::empty());
        } else {
            let mut input = Vec::with_capacity(rest.len() + drafts.len());
            input.extend_from_slice(rest);
            input.extend_from_slice(&drafts);
            let mut rows = decoder
                .forward(&input)
                .await?
                .into_iter()
                .skip(rest.len() - 1);
            self.logits = rows
                .next()
                .ok_or_else(|| WispError::Internal("the step returned no logits".into()))?;
            self.usage.draft_tokens += self.speculation.store(drafts, rows);
        }
        self.usage.passes += 1;
        Ok(())
    }

    /// Removes the unconfirmed draft tokens from the cache.
    pub fn drop_drafts(&mut self, decoder: &mut Decoder) -> Result<()> {
        self.speculation.drop(decoder)
    }
}
