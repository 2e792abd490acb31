//! The hook through which a constraint (a grammar, a JSON schema, a banned-token list) shapes the logits
//! before the sampler sees them, without the sampler knowing anything about it.

use crate::error::Result;

pub trait LogitsProcessor {
    /// Adjusts the logits of the next token in place; a token that must not come next gets `-inf`.
    /// `history` is the token sequence the sampler was given (prompt and generated tokens, as the caller
    /// chose).
    fn process(&mut self, history: &[u32], logits: &mut [f32]) -> Result<()>;

    /// Told the token that was sampled, so that a stateful constraint can advance.
    fn accept(&mut self, token: u32) -> Result<()>;

    /// After `accept`: the tokens that must come next (the constraint allows nothing else), already
    /// accepted by this processor, so the generation can append them without sampling (jump-forward).
    fn jump_forward(&mut self) -> Result<Vec<u32>> {
        Ok(Vec::new())
    }
}
