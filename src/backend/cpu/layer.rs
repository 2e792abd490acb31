//! The per-layer math of the decoder (the same as `graph::decoder`'s), on rows of f32 activations: small
//! functions that a backend trait can later name one by one.

use std::ops::Range;

use super::{kernels, parallel};
use crate::model::RopeStyle;

/// RMSNorm of each row of `x` (rows as long as `w`) into `out`: `x / sqrt(mean(x^2) + eps) * w`.
pub(crate) fn rms_norm(x: &[f32], w: &[f32], eps: f32, out: &mut [f32]) {
    let n = w.len();
    for (xr, or) in x.chunks_exact(n).zip(out.chunks_exact_mut(n)) {
        let ms = xr.iter().map(|v| v * v).sum::<f32>() / n as f32;
        let rms = (ms + eps).sqrt();
        for ((o, &v), &g) in or.iter_mut().zip(xr).zip(w) {
            *o = v / rms * g;
        }
    }
}

/// RMSNorm of each head (`w.len()` values) of `x` in place: Qwen3's q and k norms.
pub(crate) fn head_norm(x: &mut [f32], w: &[f32], eps: f32) {
    let n = w.len();
    let mut tmp = vec![0.0; n];
    for head in x.chunks_exact_mut(n) {
        rms_norm(head, w, eps, &mut tmp);
        head.copy_from_slice(&tmp);
    }
}

/// `x[t] += b` for each row of `x`.
pub(crate) fn add_rows(x: &mut [f32], b: &[f32]) {
    for row in x.chunks_exact_mut(b.len()) {
        add(row, b);
    }
}

pub(crate) fn add(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

/// `e^x` within a few ulp (x clamped to [-87, 88], where f32's normal range ends), branch-free so that
/// loops over it vectorize: on wasm `f32::exp` is a libm call per value. `x = n ln2 + r` with
/// `|r| <= ln2 / 2` (ln2 in two parts, Cody and Waite, so `r` is exact), `e^r` by its Taylor series to
/// `r^6` (remainder below 1.3e-7 of it), and `2^n` built from its exponent bits. The simd128 softmax
/// repeats these operations four values at a time.
pub(crate) fn exp(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let x = x.clamp(-87.0, 88.0);
    let n = (x * std::f32::consts::LOG2_E + 0.5).floor();
    let r = (x - n * LN2_HI) - n * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (1.0 / 2.0
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    // n is in [-126, 127], so n + 127 is a normal exponent.
    f32::from_bits(((n as i32 + 127) as u32) << 23) * p
}

/// SwiGLU: `gate = silu(gate) * up`.
pub(crate) fn swiglu(gate: &mut [f32], up: &[f32]) {
    for (g, &u) in gate.iter_mut().zip(up) {
        *g = *g / (1.0 + exp(-*g)) * u;
    }
}

/// Rotary embeddings of heads of `head_dim` values.
pub(crate) struct Rope {
    style: RopeStyle,
    head_dim: usize,
    /// Frequency of rotary pair i: `theta^(-2i / head_dim)`.
    freq: Vec<f64>,
}

impl Rope {
    pub fn new(style: RopeStyle, head_dim: usize, theta: f32) -> Self {
        let freq = (0..head_dim / 2)
            .map(|i| 1.0 / f64::from(theta).powf(2.0 * i as f64 / head_dim as f64))
            .collect();
        Rope {
            style,
            head_dim,
            freq,
        }
    }

    /// `(cos, sin)` of every rotary pair at each position of `positions`, computed once per chunk for
    /// every layer's q and k.
    pub fn angles(&self, positions: Range<usize>) -> Vec<(f32, f32)> {
        positions
            .flat_map(|pos| {
                // sin/cos in f64 like the wonnx runtime's tables, then rounded to f32.
                self.freq.iter().map(move |f| {
                    let (s, c) = (pos as f64 * f).sin_cos();
                    (c as f32, s as f32)
                })
            })
            .collect()
    }

    /// Rotates every head of the row `x` by the angles of one position (`head_dim / 2` entries of
    /// [`Rope::angles`]): pair (a, b) becomes `(a cos - b sin, b cos + a sin)`, the graph's
    /// `x cos + rotate(x) sin`.
    pub fn apply(&self, x: &mut [f32], angles: &[(f32, f32)]) {
        let half = self.head_dim / 2;
        for head in x.chunks_exact_mut(self.head_dim) {
            for (i, &(cos, sin)) in angles.iter().enumerate() {
                let (a, b) = match self.style {
                    RopeStyle::Halves => (i, i + half),
                    RopeStyle::Interleaved => (2 * i, 2 * i + 1),
                };
                let (xa, xb) = (head[a], head[b]);
                head[a] = xa * cos - xb * sin;
                head[b] = xb * cos + xa * sin;
            }
        }
    }
}

/// Sizes of grouped-query attention.
#[derive(Clone, Copy)]
pub(crate) struct Heads {
    pub q: usize,
    pub kv: usize,
    pub dim: usize,
}

/// Causal grouped-query attention of the rows of `q` (`[T, heads.q * dim]`, token t at position
/// `start + t`) over the cached `keys` and `values` (`[start + T, heads.kv * dim]`, the chunk's own
/// rows included), into `out` (`[T, heads.q * dim]`). A head runs for up to four consecutive tokens at
/// once (their scores as f32 tiles against four keys at a time, their weighted sums reading each value
/// row once), on the CPU backend's threads (`parallel`); every value is computed as it would be for its
/// token alone, so draft verification gives the logits of one-token steps.
pub(crate) fn attention(
    q: &[f32],
    keys: &[f32],
    values: &[f32],
    start: usize,
    heads: Heads,
    out: &mut [f32],
) {
    let Heads { q: h, dim, .. } = heads;
    let qw = h * dim;
    let tokens = q.len() / qw;
    let groups = tokens.div_ceil(QUERY_TILE);
    // Each head of token t reads start + t + 1 keys and as many values.
    let work = (2 * qw).saturating_mul(tokens.saturating_mul(start) + tokens * (tokens + 1) / 2);
    // [head][token][dim], tokens padded to whole tiles: a task's outputs are one contiguous piece.
    let mut by_head = vec![0.0; h * groups * QUERY_TILE * dim];
    let at = Attention {
        q,
        keys,
        values,
        start,
        heads,
    };
    parallel::for_each_chunk(
        &mut by_head,
        QUERY_TILE * dim,
        work,
        Vec::new,
        |scores, i, oh| {
            let (head, t0) = (i / groups, i % groups * QUERY_TILE);
            match tokens - t0 {
                1 => at.head::<1>(head, t0, scores, oh),
                2 => at.head::<2>(head, t0, scores, oh),
                3 => at.head::<3>(head, t0, scores, oh),
                _ => at.head::<QUERY_TILE>(head, t0, scores, oh),
            }
        },
    );
    for (t, row) in out.chunks_exact_mut(qw).enumerate() {
        for (head, o) in row.chunks_exact_mut(dim).enumerate() {
            let from = ((head * groups * QUERY_TILE) + t) * dim;
            o.copy_from_slice(&by_head[from..from + dim]);
        }
    }
}

/// Tokens whose attention for one head is computed together.
const QUERY_TILE: usize = 4;

/// One chunk's attention inputs (see [`attention`]).
struct Attention<'a> {
    q: &'a [f32],
    keys: &'a [f32],
    values: &'a [f32],
    start: usize,
    heads: Heads,
}

impl Attention<'_> {
    /// `scores[t * longest + s]`: token `t`'s query `qs[t]` times key `s` of kv head `g`, times `scale`,
    /// for every `s` below `longest`, `K` keys per tile.
    fn scores<const K: usize, const N: usize>(
        &self,
        qs: [&[f32]; N],
        longest: usize,
        g: usize,
        scale: f32,
        scores: &mut [f32],
    ) {
        let Heads { kv, dim, .. } = self.heads;
        let kw = kv * dim;
        let key = |s: usize| &self.keys[s * kw + g * dim..s * kw + (g + 1) * dim];
        let whole = longest / K * K;
        for s in (0..whole).step_by(K) {
            let tile = kernels::tile::<K, N>(std::array::from_fn(|i| key(s + i)), qs);
            for (i, row) in tile.iter().enumerate() {
                for (t, &v) in row.iter().enumerate() {
                    scores[t * longest + s + i] = v * scale;
                }
            }
        }
        for s in whole..longest {
            let [row] = kernels::tile::<1, N>([key(s)], qs);
            for (t, &v) in row.iter().enumerate() {
                scores[t * longest + s] = v * scale;
            }
        }
    }

    /// Head `head` for the `N` tokens from `t0`, into `oh` (`N` rows of `dim`, then padding); `scores`
    /// is scratch space.
    fn head<const N: usize>(&self, head: usize, t0: usize, scores: &mut Vec<f32>, oh: &mut [f32]) {
        let Heads { q: h, kv, dim } = self.heads;
        let (qw, kw) = (h * dim, kv * dim);
        let g = head / (h / kv);
        let scale = 1.0 / (dim as f32).sqrt();
        let qs: [&[f32]; N] = std::array::from_fn(|t| {
            let row = (t0 + t) * qw + head * dim;
            &self.q[row..row + dim]
        });
        // Token t sees positions 0..=start + t; the graph's mask gives later ones exp(-1e9) = 0. The
        // last token sees the most; the others' extra weights are 0, whose products add nothing.
        let seen: [usize; N] = std::array::from_fn(|t| self.start + t0 + t + 1);
        let longest = seen[N - 1];
        scores.clear();
        scores.resize(N * longest, 0.0);
        // Keys per tile: with four tokens, two (eight accumulators, which fit wasm engines' registers).
        match N {
            1 | 2 => self.scores::<4, N>(qs, longest, g, scale, scores),
            _ => self.scores::<2, N>(qs, longest, g, scale, scores),
        }
        for (t, p) in scores.chunks_exact_mut(longest).enumerate() {
            let (visible, hidden) = p.split_at_mut(seen[t]);
            kernels::softmax(visible);
            hidden.fill(0.0);
        }
        let ps: [&[f32]; N] = std::array::from_fn(|t| &scores[t * longest..(t + 1) * longest]);
        let mut rows = oh.chunks_exact_mut(dim);
        let outs: [&mut [f32]; N] = std::array::from_fn(|_| {
            let o = rows.next().expect("a row per token");
            o.fill(0.0);
            o
        });
        let values = &self.values[g * dim..];
        match N {
            // Up to eight accumulators (with the row's vectors, what wasm engines keep in registers).
            1 | 2 => kernels::weighted_sum::<N, 4>(ps, values, kw, outs),
            _ => kernels::weighted_sum::<N, 2>(ps, values, kw, outs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::exp;

    #[test]
    fn exp_is_within_a_few_ulp_of_f64() {
        let mut worst = 0.0f64;
        for i in 0..=200_000 {
            let x = -87.0 + 175.0 * f64::from(i) / 200_000.0;
            let (got, want) = (f64::from(exp(x as f32)), (f64::from(x as f32)).exp());
            worst = worst.max((got - want).abs() / want);
        }
        assert!(
            worst < 4.0 * f64::from(f32::EPSILON),
            "relative error {worst}"
        );
        assert_eq!(exp(-1.0e9), exp(-87.0));
        assert!(exp(f32::NAN).is_nan());
    }
}
