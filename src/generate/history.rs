//! The tokens in a decoder's key/value cache, in order: the next position, prefix reuse, rollback, and
//! the checks new tokens must pass before anything runs. Each backend keeps one.

use crate::error::{Result, WispError};

#[derive(Debug)]
pub struct TokenHistory {
    tokens: Vec<u32>,
    capacity: usize,
}

impl TokenHistory {
    /// Nothing is allocated for `capacity` up front: it is the caller's number (a manifest's
    /// `context_length`), and the tokens grow as they come.
    pub fn new(capacity: usize) -> Self {
        TokenHistory {
            tokens: Vec::new(),
            capacity,
        }
    }

    /// Tokens in the cache: the position the next token gets.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }

    /// Prefix reuse: keeps the longest cached prefix of `ids`, but at least one token short of it since
    /// the caller needs the logits after the last one, and returns how many tokens it kept. The caller
    /// then runs `forward(&ids[kept..])`.
    pub fn reuse_prefix(&mut self, ids: &[u32]) -> usize {
        let common = self
            .tokens
            .iter()
            .zip(ids)
            .take_while(|(a, b)| a == b)
            .count();
        let kept = common.min(ids.len().saturating_sub(1));
        self.tokens.truncate(kept);
        kept
    }

    /// Drops every cached token from `pos` on, so that the next token gets position `pos`.
    pub fn seek(&mut self, pos: usize) -> Result<()> {
        if pos > self.tokens.len() {
            return Err(WispError::InvalidInput(format!(
                "cannot seek to position {pos}: only {} tokens are cached",
                self.tokens.len()
            )));
        }
        self.tokens.truncate(pos);
        Ok(())
    }

    /// Refuses tokens that would overflow the cache or fall outside the vocabulary; the cache is unchanged.
    pub fn check(&self, tokens: &[u32], vocab: usize) -> Result<()> {
        if self.tokens.len() + tokens.len() > self.capacity {
            return Err(WispError::ContextOverflow(format!(
                "{} cached + {} new tokens exceed the context of {} tokens",
                self.tokens.len(),
                tokens.len(),
                self.capacity
            )));
        }
        if let Some(bad) = tokens.iter().find(|&&id| id as usize >= vocab) {
            return Err(WispError::InvalidInput(format!(
                "token id {bad} is outside the vocabulary of {vocab}"
            )));
        }
        Ok(())
    }

    /// Records tokens whose keys and values were just written to the cache.
    pub fn extend(&mut self, tokens: &[u32]) {
        self.tokens.extend_from_slice(tokens);
    }
}

/// Which rows of a chunk's logits a forward pass returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogitRows {
    All,
    Last,
    None,
}

impl LogitRows {
    /// The chunks of a forward pass over `tokens`, at most `len` tokens each, with the rows each returns:
    /// every row, or with `last_only` the very last one. Both backends run their passes by this plan.
    pub fn chunks(
        tokens: &[u32],
        len: usize,
        last_only: bool,
    ) -> impl Iterator<Item = (&[u32], LogitRows)> {
        let count = tokens.len().div_ceil(len);
        tokens.chunks(len).enumerate().map(move |(i, chunk)| {
            let rows = match (last_only, i + 1 == count) {
                (false, _) => LogitRows::All,
                (true, true) => LogitRows::Last,
                (true, false) => LogitRows::None,
            };
            (chunk, rows)
        })
    }
}
