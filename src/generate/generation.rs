//! One generation, stepped by its caller: prefill the prompt (reusing the cached prefix), then one token
//! per `step`. Stepping from outside lets JavaScript stream each delta and stop between steps; whatever
//! was fed to the model stays in the cache, so a stopped generation leaves the model usable.

use serde::Serialize;

use super::{
    Decoder, FinishReason, Sampler, SamplingParams, StopChecker, StopConditions, TextStream,
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
        let token = self.sampler.sample(&mut self.logits, decoder.tokens())?;
        self.usage.completion_tokens += 1;
        let delta = self.stream.push(tokenizer, token)?;
        let step = self.stop.push(token, &delta);
        let mut text = step.text;
        let mut finish = step.finish;
        if finish.is_none() && decoder.len() + 1 >= decoder.capacity() {
            // The context is full: end as if the budget ran out.
            text.push_str(&self.stop.flush());
            finish = Some(FinishReason::Length);
        }
        match finish {
            None => {
                let mut rows = decoder.forward(&[token]).await?;
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
            text,
            finish,
        })
    }
}
