//! Speculation: when a step runs its token through the model it also runs a few draft tokens in the same
//! pass, guessed by prompt lookup: copied from earlier in the context. An agent quotes its context all the
//! time (a city from the question, a number from a tool result), so the tokens that followed the last few
//! tokens the previous time they appeared are often what comes next. The next steps sample from the
//! drafts' rows of logits as long as the sampled token equals the draft; the first mismatch drops the
//! remaining drafts from the cache. Each token is still sampled from the logits of exactly its prefix,
//! with the same random draws, so the output is the same as without drafts; only the number of passes
//! changes. `Generation` owns one `Speculation` and asks it what to run and what it may keep.

use std::collections::VecDeque;

use crate::backend::{Decoder, DraftPolicy};
use crate::error::Result;

/// The drafts in the cache after a generation's confirmed tokens, and how long the next ones may be.
pub(super) struct Speculation {
    /// Draft tokens in the cache after the confirmed ones, each with the logits after it.
    drafts: VecDeque<(u32, Vec<f32>)>,
    policy: DraftPolicy,
    /// Draft length of the next pass (adaptive policies move it between 1 and `policy.max_len`).
    draft_len: usize,
    /// Drafts of the current pass accepted so far.
    pass_accepted: usize,
}

impl Speculation {
    pub fn new(policy: DraftPolicy) -> Self {
        Speculation {
            drafts: VecDeque::new(),
            policy,
            draft_len: policy.max_len,
            pass_accepted: 0,
        }
    }

    /// Draft tokens in the cache that are not confirmed yet.
    pub fn pending(&self) -> usize {
        self.drafts.len()
    }

    /// Confirms the drafts that equal the first of `tokens` (the sampled token, then forced ones): returns
    /// how many, and the logits after the last of them.
    pub fn accept(&mut self, tokens: &[u32]) -> (usize, Option<Vec<f32>>) {
        let (mut matched, mut logits) = (0, None);
        while let (Some(&token), Some((draft, _))) = (tokens.get(matched), self.drafts.front()) {
            if *draft != token {
                break;
            }
            logits = self.drafts.pop_front().map(|(_, row)| row);
            matched += 1;
            self.pass_accepted += 1;
            if self.drafts.is_empty() && self.policy.adaptive {
                self.draft_len = (self.draft_len * 2).min(self.policy.max_len);
            }
        }
        (matched, logits)
    }

    /// Before a new pass: drafts left unconfirmed were wrong; drops them from the cache (shortening the
    /// next drafts when none of the pass held, for adaptive policies).
    pub fn reject_rest(&mut self, decoder: &mut Decoder) -> Result<()> {
        if !self.drafts.is_empty() && self.pass_accepted == 0 && self.policy.adaptive {
            self.draft_len = (self.draft_len / 2).max(1);
        }
        self.drop(decoder)
    }

    /// Drafts to run after `next` (the token about to be run), at most `room` of them.
    pub fn propose(&self, context: &[u32], next: u32, room: usize) -> Vec<u32> {
        draft(
            context,
            next,
            self.draft_len.min(room),
            self.policy.min_ngram,
        )
    }

    /// Keeps the drafts just run with their rows of logits; returns how many.
    pub fn store(&mut self, drafts: Vec<u32>, rows: impl Iterator<Item = Vec<f32>>) -> usize {
        self.drafts = drafts.into_iter().zip(rows).collect();
        self.pass_accepted = 0;
        self.drafts.len()
    }

    /// Removes the unconfirmed drafts from the cache.
    pub fn drop(&mut self, decoder: &mut Decoder) -> Result<()> {
        if !self.drafts.is_empty() {
            decoder.seek(decoder.len() - self.drafts.len())?;
            self.drafts.clear();
        }
        Ok(())
    }
}

/// Longest n-gram matched; shorter ones are tried when it finds nothing.
const MAX_NGRAM: usize = 3;

/// Up to `max_len` tokens that followed the most recent earlier occurrence of the longest suffix (of
/// `min_ngram` to [`MAX_NGRAM`] tokens) of `context` followed by `next`.
fn draft(context: &[u32], next: u32, max_len: usize, min_ngram: usize) -> Vec<u32> {
    if max_len == 0 {
        return Vec::new();
    }
    let len = context.len() + 1;
    let at = |i: usize| if i < context.len() { context[i] } else { next };
    for n in (min_ngram.max(1)..=MAX_NGRAM.min(len - 1)).rev() {
        let suffix = len - n;
        // The most recent match first: the freshest quote is the likeliest to continue.
        for start in (0..suffix).rev() {
            if (0..n).all(|k| at(start + k) == at(suffix + k)) {
                let from = start + n;
                let to = (from + max_len).min(len);
                return (from..to).map(at).collect();
            }
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::draft;

    #[test]
    fn copies_what_followed_the_longest_recent_match() {
        let ctx = [1, 5, 6, 7, 8, 2, 9, 4, 4, 6, 7];
        // [6, 7, 8] appeared before, followed by 2 9 4.
        assert_eq!(draft(&ctx, 8, 3, 1), vec![2, 9, 4]);
        // Nothing ends in [6, 7, 9] or [7, 9]; [9] alone was followed by 4 4.
        assert_eq!(draft(&ctx, 9, 2, 1), vec![4, 4]);
        // ... unless single-token matches are not enough.
        assert_eq!(draft(&ctx, 9, 2, 2), Vec::<u32>::new());
        // [3, 1] appeared twice; the most recent one wins.
        let ctx = [3, 1, 2, 3, 1, 5, 3];
        assert_eq!(draft(&ctx, 1, 4, 2), vec![5, 3, 1]);
    }

    #[test]
    fn a_draft_may_run_into_the_new_token_but_not_past_the_end() {
        let ctx = [4, 4, 4];
        assert_eq!(draft(&ctx, 4, 8, 1), vec![4]);
        assert_eq!(draft(&[], 4, 8, 1), Vec::<u32>::new());
        assert_eq!(draft(&[1, 2], 3, 8, 1), Vec::<u32>::new());
        assert_eq!(draft(&[1, 2, 1], 2, 0, 1), Vec::<u32>::new());
    }
}
