//! A compiled grammar as a logits processor: masks what the grammar forbids, advances on each token, and
//! finds the tokens the grammar forces (jump-forward): its forced text as the tokenizer writes it, and a
//! token it allows alone.

use llguidance::Matcher;
use toktrie::SimpleVob;

use super::GrammarEnv;
use crate::error::{Result, WispError};
use crate::generate::LogitsProcessor;

pub struct GrammarConstraint {
    matcher: Matcher,
    eos: Vec<u32>,
    jump_forward: bool,
    /// The mask for the next token when `jump_forward` already computed it.
    next_mask: Option<SimpleVob>,
    /// The coded error of a failure while decoding (a tool grammar's or a response format's).
    error: fn(String) -> WispError,
}

impl GrammarConstraint {
    /// Compiles `lark`; a grammar that does not compile is `error` here, before any token. With
    /// `jump_forward`, what the grammar forces is appended without sampling: the forced text in the
    /// tokenizer's own tokens, and a token the grammar allows alone (the one masking and greedy picking
    /// would give).
    pub fn new(
        env: &GrammarEnv,
        lark: String,
        error: fn(String) -> WispError,
        jump_forward: bool,
    ) -> Result<Self> {
        let parser = env.parser(lark, error)?;
        Ok(GrammarConstraint {
            matcher: Matcher::new(Ok(parser)),
            eos: env.eos().to_vec(),
            jump_forward,
            next_mask: None,
            error,
        })
    }

    fn mask(&mut self) -> Result<SimpleVob> {
        let error = self.error;
        let mut mask = self
            .matcher
            .compute_mask_or_eos()
            .map_err(|e| error(e.to_string()))?;
        // llguidance allows its EOS where the grammar may end; every end-of-turn token may end it.
        if self.eos.iter().any(|&id| mask.is_allowed(id)) {
            for &id in &self.eos {
                mask.allow_token(id);
            }
        }
        if mask.is_zero() {
            let why = self
                .matcher
                .get_error()
                .unwrap_or_else(|| "no token continues the grammar".into());
            return Err(WispError::AllTokensMasked(why));
        }
        Ok(mask)
    }

    fn consume(&mut self, token: u32) -> Result<()> {
        let error = self.error;
        self.matcher
            .consume_token(token)
            .map_err(|e| error(e.to_string()))
    }
}

impl LogitsProcessor for GrammarConstraint {
    fn process(&mut self, _history: &[u32], logits: &mut [f32]) -> Result<()> {
        let mask = match self.next_mask.take() {
            Some(mask) => mask,
            None => self.mask()?,
        };
        for (id, logit) in (0u32..).zip(logits.iter_mut()) {
            if !mask.is_allowed(id) {
                *logit = f32::NEG_INFINITY;
            }
        }
        Ok(())
    }

    fn accept(&mut self, token: u32) -> Result<()> {
        // An end token ends the generation: nothing follows for the grammar to check.
        if self.eos.contains(&token) {
            return Ok(());
        }
        self.consume(token)
    }

    fn jump_forward(&mut self) -> Result<Vec<u32>> {
        let mut forced = Vec::new();
        if !self.jump_forward {
            return Ok(forced);
        }
        loop {
            // The text the grammar forces, as the tokenizer writes it (llguidance keeps back a last token
            // that later bytes could merge into); a token it does not take ends the run.
            let run = self.matcher.compute_ff_tokens();
            let taken = self
                .matcher
                .try_consume_tokens(&run)
                .map_err(|e| (self.error)(e.to_string()))?;
            forced.extend_from_slice(&run[..taken]);
            // Then a token the grammar allows alone (one llguidance kept back, or a special token).
            let mask = self.mask()?;
            let only = match mask.num_set() {
                1 => mask.first_bit_set().map(|id| id as u32),
                _ => None,
            };
            match only {
                Some(id) if !self.eos.contains(&id) => {
                    self.consume(id)?;
                    forced.push(id);
                }
                _ => {
                    self.next_mask = Some(mask);
                    return Ok(forced);
                }
            }
        }
    }
}
