//! Prompt-lookup drafts: guesses of the next tokens copied from earlier in the context. An agent quotes
//! its context all the time (a city from the question, a number from a tool result), so the tokens that
//! followed the last few tokens the previous time they appeared are often what comes next. The guesses
//! are only drafts: the model checks them all in one pass and keeps the ones it would have produced.

/// Longest n-gram matched; shorter ones are tried when it finds nothing.
const MAX_NGRAM: usize = 3;

/// Up to `max_len` tokens that followed the most recent earlier occurrence of the longest suffix (of
/// `min_ngram` to [`MAX_NGRAM`] tokens) of `context` followed by `next`.
pub fn draft(context: &[u32], next: u32, max_len: usize, min_ngram: usize) -> Vec<u32> {
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
