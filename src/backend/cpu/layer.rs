//! The per-layer math of the decoder (the same as `graph::decoder`'s), on rows of f32 activations: small
//! functions that a backend trait can later name one by one.

use super::parallel;
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

/// SwiGLU: `gate = silu(gate) * up`.
pub(crate) fn swiglu(gate: &mut [f32], up: &[f32]) {
    for (g, &u) in gate.iter_mut().zip(up) {
        *g = *g / (1.0 + (-*g).exp()) * u;
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

    /// Rotates every head of the row `x` by position `pos`: pair (a, b) becomes
    /// `(a cos - b sin, b cos + a sin)`, the graph's `x cos + rotate(x) sin`.
    pub fn apply(&self, x: &mut [f32], pos: usize) {
        let half = self.head_dim / 2;
        // sin/cos in f64 like the wonnx runtime's tables, then rounded to f32.
        let angles: Vec<(f32, f32)> = self
            .freq
            .iter()
            .map(|f| {
                let (s, c) = (pos as f64 * f).sin_cos();
                (c as f32, s as f32)
            })
            .collect();
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
/// rows included), into `out` (`[T, heads.q * dim]`). The heads of the chunk's tokens run on the CPU
/// backend's threads (`parallel`), each computed as it would be alone.
pub(crate) fn attention(
    q: &[f32],
    keys: &[f32],
    values: &[f32],
    start: usize,
    heads: Heads,
    out: &mut [f32],
) {
    let Heads { q: h, kv, dim } = heads;
    let (qw, kw) = (h * dim, kv * dim);
    let scale = 1.0 / (dim as f32).sqrt();
    let group = h / kv;
    let tokens = q.len() / qw;
    // Each head of token t reads start + t + 1 keys and as many values.
    let work = 2 * qw * (tokens * start + tokens * (tokens + 1) / 2);
    parallel::for_each_chunk(out, dim, work, Vec::new, |scores, i, oh| {
        let (t, head) = (i / h, i % h);
        // Token t sees positions 0..=start + t; the graph's mask gives later ones exp(-1e9) = 0.
        let seen = start + t + 1;
        let g = head / group;
        let qh = &q[t * qw + head * dim..t * qw + (head + 1) * dim];
        scores.clear();
        scores.extend(keys.chunks_exact(kw).take(seen).map(|k| {
            let kh = &k[g * dim..(g + 1) * dim];
            qh.iter().zip(kh).map(|(a, b)| a * b).sum::<f32>() * scale
        }));
        let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let mut sum = 0.0;
        for s in scores.iter_mut() {
            *s = (*s - max).exp();
            sum += *s;
        }
        oh.fill(0.0);
        for (&p, v) in scores.iter().zip(values.chunks_exact(kw)) {
            let p = p / sum;
            for (o, &x) in oh.iter_mut().zip(&v[g * dim..(g + 1) * dim]) {
                *o += p * x;
            }
        }
    });
}
