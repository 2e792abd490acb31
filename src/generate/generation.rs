//! One generation, stepped by its caller: prefill the prompt (reusing the cached prefix), then one token
//! per `step`. Stepping from outside lets JavaScript stream each delta and stop between steps; whatever
//! was fed to the model stays in the cache, so a stopped generation leaves the model usable.
//!
//! Speculation: when a step runs its token through the model it also runs a few draft tokens guessed by
//! prompt lookup, in the same pass. The next steps sample from those rows' logits as long as the sampled
//! token equals the draft; the first mismatch drops the remaining drafts from the cache. Each token is
//! still sampled from the logits of exactly its prefix, with the same random draws, so the output is
//! the same as without drafts; only the number of passes changes.

use std::collections::VecDeque;

use serde::Serialize;

use super::{
    lookup, Decoder, FinishReason, Sampler, SamplingParams, StopChecker, StopConditions, TextStream,
};
use crate::error::{Result, WispError};
use crate::profile::now_ms;
use crate::text::Tokenizer;

#[derive(Debug, Clone, PartialEq)]
pub struct GenerateOptions {
    pub sampling: SamplingParams,
    pub max_new_tokens: usize,
    pub stop: Vec<String>,
    /// Draft tokens verified per pass; `None` lets the backend choose (see
    /// [`Decoder::free_draft_len`]), `Some(0)` turns speculation off.
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
    /// Forward passes of the model (prefill chunks not counted separately).
    pub passes: usize,
}

/// What one step produced: the token, the text that may be shown now, and whether the generation is over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    pub token: u32,
    pub text: String,
    pub finish: Option<FinishReason>,
}

pub struct Generation {
    sampler: Sampler,
    stop: StopChecker,
    stream: TextStream,
    /// The logits after the last confirmed token: the next token is drawn from them.
    logits: Vec<f32>,
    /// Draft tokens in the cache after the confirmed ones, each with the logits after it.
    drafts: VecDeque<(u32, Vec<f32>)>,
    draft_len: usize,
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
        let draft_len = options
            .draft_len
            .unwrap_or_else(|| decoder.free_draft_len());
        let cached = decoder.reuse_prefix(prompt);
        let logits = decoder.forward_last(&prompt[cached..]).await?;
        Ok(Generation {
            sampler,
            stop,
            stream: TextStream::new(prompt),
            logits,
            drafts: VecDeque::new(),
            draft_len,
            finish: None,
            usage: Usage {
                prompt_tokens: prompt.len(),
                cached_tokens: cached,
                passes: 1,
                ..Usage::default()
            },
        })
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
        let confirmed = decoder.len() - self.drafts.len();
        let t = now_ms();
        let token = self
            .sampler
            .sample(&mut self.logits, &decoder.tokens()[..confirmed])?;
        let t = decoder.profile_mut().lap("sampling", t);
        self.usage.completion_tokens += 1;
        let delta = self.stream.push(tokenizer, token)?;
        let step = self.stop.push(token, &delta);
        let profile = decoder.profile_mut();
        profile.lap("detokenize_stop", t);
        profile.tokens_sampled += 1;
        let mut text = step.text;
        let mut finish = step.finish;
        if finish.is_none() && confirmed + 1 >= decoder.capacity() {
            // The context is full: end as if the budget ran out.
            text.push_str(&self.stop.flush());
            finish = Some(FinishReason::Length);
        }
        match finish {
            None => self.advance(decoder, token).await?,
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
            text,
            finish,
        })
    }

    /// Puts `token` in the cache and the logits after it in `self.logits`: from the drafts when the first
    /// one is `token`, otherwise by a pass over `token` and fresh drafts.
    async fn advance(&mut self, decoder: &mut Decoder, token: u32) -> Result<()> {
        if let Some((draft, _)) = self.drafts.front() {
            if *draft == token {
                if let Some((_, logits)) = self.drafts.pop_front() {
                    self.logits = logits;
                    self.usage.accepted_draft_tokens += 1;
                }
                return Ok(());
            }
            self.drop_drafts(decoder)?;
        }
        // Room left in the context and in the token budget after `token`.
        let room = decoder
            .capacity()
            .saturating_sub(decoder.len() + 2)
            .min(self.stop.remaining_tokens().saturating_sub(1));
        let t = now_ms();
        let drafts = lookup::draft(decoder.tokens(), token, self.draft_len.min(room));
        decoder.profile_mut().lap("draft_lookup", t);
        let mut input = Vec::with_capacity(1 + drafts.len());
        input.push(token);
        input.extend_from_slice(&drafts);
        let mut rows = decoder.forward(&input).await?.into_iter();
        self.logits = rows
            .next()
            .ok_or_else(|| WispError::GpuInternal("the step returned no logits".into()))?;
        self.drafts = drafts.into_iter().zip(rows).collect();
        self.usage.draft_tokens += self.drafts.len();
        self.usage.passes += 1;
        Ok(())
    }

    /// Removes the unconfirmed draft tokens from the cache.
    pub fn drop_drafts(&mut self, decoder: &mut Decoder) -> Result<()> {
        if !self.drafts.is_empty() {
            decoder.seek(decoder.len() - self.drafts.len())?;
            self.drafts.clear();
        }
        Ok(())
    }
}
