//! One generation, stepped by its caller: prefill the prompt (reusing the cached prefix), then one token
//! per `step`. Stepping from outside lets JavaScript stream each delta and stop between steps; whatever
//! was fed to the model stays in the cache, so a stopped generation leaves the model usable.

use serde::Serialize;

use super::{
    Decoder, FinishReason, LogitsProcessor, Sampler, SamplingParams, StopChecker, StopConditions,
    TextStream,
};
use crate::error::{Result, WispError};
use crate::text::Tokenizer;

#[derive(Debug, Clone, PartialEq)]
pub struct GenerateOptions {
    pub sampling: SamplingParams,
    pub max_new_tokens: usize,
    pub stop: Vec<String>,
}

/// Token counts of a generation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub prompt_tokens: usize,
    /// Prompt tokens already in the cache from an earlier call (prefix reuse): not run again.
    pub cached_tokens: usize,
    pub completion_tokens: usize,
    /// Completion tokens a constraint forced (jump-forward): appended without sampling, run through the
    /// model together with the sampled token before them.
    pub forced_tokens: usize,
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
    /// The logits after the last token in the cache: the next token is drawn from them.
    logits: Vec<f32>,
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
        let cached = decoder.reuse_prefix(prompt);
        let mut rows = decoder.forward(&prompt[cached..]).await?;
        let logits = rows
            .pop()
            .ok_or_else(|| WispError::GpuInternal("the prefill returned no logits".into()))?;
        Ok(Generation {
            sampler,
            stop,
            stream: TextStream::new(prompt),
            logits,
            finish: None,
            usage: Usage {
                prompt_tokens: prompt.len(),
                cached_tokens: cached,
                completion_tokens: 0,
                forced_tokens: 0,
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
        let token = self.sampler.sample(&mut self.logits, decoder.tokens())?;
        let (mut text, mut finish) = self.push(tokenizer, token)?;
        let mut fed = vec![token];
        if finish.is_none() {
            for forced in self.sampler.jump_forward()? {
                if decoder.len() + fed.len() + 1 >= decoder.capacity() {
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
        if finish.is_none() && decoder.len() + fed.len() >= decoder.capacity() {
            // The context is full: end as if the budget ran out.
            text.push_str(&self.stop.flush());
            finish = Some(FinishReason::Length);
        }
        match finish {
            None => {
                // Forced tokens run in the same call as the sampled one: one forward for all of them.
                let mut rows = decoder.forward(&fed).await?;
                self.logits = rows
                    .pop()
                    .ok_or_else(|| WispError::GpuInternal("the step returned no logits".into()))?;
            }
            Some(FinishReason::Length) => text.push_str(&self.stream.finish(tokenizer)?),
            Some(_) => {}
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
}
