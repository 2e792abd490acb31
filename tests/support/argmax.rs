//! The greedy choice, for the integration tests that follow a model's argmax tokens.

/// The index of the largest value (the first of equal ones).
pub fn argmax(v: &[f32]) -> usize {
    v.iter()
        .enumerate()
        .fold(0, |best, (i, &x)| if x > v[best] { i } else { best })
}
