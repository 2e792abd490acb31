//! Portable dot products of one weight row with activation rows, written so that LLVM vectorizes the
//! inner loops natively; on wasm with simd128 `dot_wasm` replaces them with bit-identical results.
//!
//! Quantized weight rows are blocks in a kernel layout (`blocks`) and activations are i16 blocks
//! (`activations`): a block's integer weights times the activation codes is an exact integer sum,
//! scaled once by the block's weight and activation scales; the block's offset `m` adds `m` times the
//! activations' block sum. Products with f32 weight rows are plain f32: one row at a time when decoding,
//! in tiles of rows and tokens for a prompt's chunk (quantized rows are then dequantized to f32 first).

#![cfg_attr(
    all(target_arch = "wasm32", target_feature = "simd128"),
    // On wasm with simd128 the kernels of `dot_wasm` replace these; they remain the reference.
    allow(dead_code)
)]

use super::activations::QuantizedRow;
use super::blocks::{
    f32_at, Layout, BYTES_BYTES, BYTES_MIN_BYTES, FOUR_BIT_BYTES, HALF, HALVES_BYTES, HALVES_QS,
    HALVES_SCALES, NIBBLES_BYTES, THREE_BIT_BYTES, TWO_BIT_BYTES,
};
use super::layer::exp;

/// Elements per block of every quantized layout (and per sub-block of Q4_K).
pub(crate) const QK: usize = 32;

/// One f32 weight row times `N` activation rows: eight lanes per row, each weight chunk loaded once for
/// all rows, and each row's operations the same whatever `N` is.
pub(crate) fn dense<const N: usize>(w: &[f32], xs: [&[f32]; N]) -> [f32; N] {
    let mut acc = [[0.0f32; 8]; N];
    for (i, wc) in w.chunks_exact(8).enumerate() {
        for (a, x) in acc.iter_mut().zip(xs) {
            let xc = &x[8 * i..8 * i + 8];
            for l in 0..8 {
                a[l] += wc[l] * xc[l];
            }
        }
    }
    let main = w.len() / 8 * 8;
    std::array::from_fn(|t| acc[t].iter().sum::<f32>() + tail_dot(w, xs[t], main))
}

/// `R` f32 weight rows times `T` activation rows, each product `ws[r] . xs[t]` in four lanes (element
/// `k` into lane `k % 4`, the lanes summed pairwise at the end): the same operations in the same order
/// for every `(r, t)` whatever `R` and `T` are, so a product does not depend on the tile it was
/// computed in. Rows of equal length.
pub(crate) fn tile<const R: usize, const T: usize>(
    ws: [&[f32]; R],
    xs: [&[f32]; T],
) -> [[f32; T]; R] {
    let mut acc = [[[0.0f32; 4]; T]; R];
    let main = ws.first().map_or(0, |w| w.len() / 4 * 4);
    for k in (0..main).step_by(4) {
        for (a, w) in acc.iter_mut().zip(ws) {
            let wc = &w[k..k + 4];
            for (at, x) in a.iter_mut().zip(xs) {
                let xc = &x[k..k + 4];
                for l in 0..4 {
                    at[l] += wc[l] * xc[l];
                }
            }
        }
    }
    std::array::from_fn(|r| {
        std::array::from_fn(|t| {
            let l = acc[r][t];
            (l[0] + l[1]) + (l[2] + l[3]) + tail_dot(ws[r], xs[t], main)
        })
    })
}

/// `outs[t][d] += ps[t][s] * rows(s)[d]` for each `s` in order (attention's weighted sum of values):
/// row `s` is `base[s * stride..][..width]`, `ps` are equally long, and each output value is its own
/// chain of multiply-adds, so it does not depend on the other outputs computed with it. `V`: vectors of
/// four values per chain group in the wasm kernel (there, the values of a row walked together).
pub(crate) fn weighted_sum<const N: usize, const V: usize>(
    ps: [&[f32]; N],
    base: &[f32],
    stride: usize,
    outs: [&mut [f32]; N],
) {
    for (p, out) in ps.into_iter().zip(outs) {
        for (s, &ps) in p.iter().enumerate() {
            let row = &base[s * stride..s * stride + out.len()];
            for (o, &v) in out.iter_mut().zip(row) {
                *o += ps * v;
            }
        }
    }
}

/// `x` as softmax weights in place: `e^(x - max) / sum`, with `layer::exp`. The maximum and the sum
/// run in four lanes (element `k` in lane `k % 4`, the lanes combined pairwise, the elements past the
/// last whole four added after), so that the simd128 kernel computes the same values with vectors; a
/// NaN is passed over by the maximum, as by `f32::max`.
pub(crate) fn softmax(x: &mut [f32]) {
    let main = x.len() / 4 * 4;
    let mut lanes = [f32::NEG_INFINITY; 4];
    for c in x[..main].chunks_exact(4) {
        for (m, &v) in lanes.iter_mut().zip(c) {
            *m = if *m < v { v } else { *m };
        }
    }
    let mut max = lanes[0].max(lanes[1]).max(lanes[2].max(lanes[3]));
    for &v in &x[main..] {
        max = max.max(v);
    }
    let mut sums = [0.0f32; 4];
    for c in x[..main].chunks_exact_mut(4) {
        for (s, v) in sums.iter_mut().zip(c) {
            *v = exp(*v - max);
            *s += *v;
        }
    }
    let mut sum = (sums[0] + sums[1]) + (sums[2] + sums[3]);
    for v in &mut x[main..] {
        *v = exp(*v - max);
        sum += *v;
    }
    for v in x.iter_mut() {
        *v /= sum;
    }
}

/// A weight row in a kernel layout as f32, unit by unit (`Layout::dequantize`): embedding rows and
/// prefill panels (`Matrix::row`).
pub(crate) fn dequantize_row(layout: Layout, w: &[u8], out: &mut [f32]) {
    for (b, o) in w
        .chunks_exact(layout.unit_bytes())
        .zip(out.chunks_exact_mut(layout.unit_len()))
    {
        layout.dequantize(b, o);
    }
}

/// `w[from..] . x[from..]`, in order: the elements a dense kernel's vector loop leaves over.
pub(crate) fn tail_dot(w: &[f32], x: &[f32], from: usize) -> f32 {
    w[from..].iter().zip(&x[from..]).map(|(a, b)| a * b).sum()
}

/// Per-row accumulators of the quantized kernels: four f32 lanes of scaled block products (the lanes of
/// wasm's `i32x4.dot_i16x8_s`, so that the simd128 kernels give bit-identical results), and the blocks'
/// offset terms.
#[derive(Clone, Copy)]
struct Acc {
    lanes: [f32; 4],
    offset: f32,
}

impl Acc {
    const ZERO: Acc = Acc {
        lanes: [0.0; 4],
        offset: 0.0,
    };

    /// Adds block `b` of `x` times the block `n d + m` (32 integer weights `n`).
    fn add(&mut self, n: &[i16; QK], d: f32, m: f32, x: QuantizedRow, b: usize) {
        self.add_lanes(
            lane_sums(n, &x.codes[b * QK..(b + 1) * QK]),
            d * x.scales[b],
        );
        self.offset += m * x.sums[b];
    }

    /// Adds exact integer lane sums times `scale`.
    fn add_lanes(&mut self, s: [i32; 4], scale: f32) {
        for (lane, sj) in self.lanes.iter_mut().zip(s) {
            *lane += sj as f32 * scale;
        }
    }

    fn total(self) -> f32 {
        let l = self.lanes;
        (l[0] + l[1]) + (l[2] + l[3]) + self.offset
    }
}

/// `n . codes` (equally long, a multiple of 8) in four lanes, pairs of products as wasm's
/// `i32x4.dot_i16x8_s` (and x86's pmaddwd, which LLVM can then use); exact, so the order within a lane is
/// free.
fn lane_sums(n: &[i16], codes: &[i16]) -> [i32; 4] {
    let mut s = [0i32; 4];
    for (wc, xc) in n.chunks_exact(8).zip(codes.chunks_exact(8)) {
        for j in 0..4 {
            s[j] += i32::from(wc[2 * j]) * i32::from(xc[2 * j])
                + i32::from(wc[2 * j + 1]) * i32::from(xc[2 * j + 1]);
        }
    }
    s
}

/// Sums the blocks of `w` (each `block_bytes` long; `decode` gives its integer weights `n`, scale `d` and
/// offset `m`) times each row of `xs`: a block is decoded once for all `N` rows, and each row sees the
/// same operations in the same order as with `N = 1`, so a token's result does not depend on how many
/// tokens share the pass.
fn blocks<const N: usize>(
    w: &[u8],
    xs: [QuantizedRow; N],
    block_bytes: usize,
    decode: impl Fn(&[u8], &mut [i16; QK]) -> (f32, f32),
) -> [f32; N] {
    let mut acc = [Acc::ZERO; N];
    let mut n = [0i16; QK];
    for (b, block) in w.chunks_exact(block_bytes).enumerate() {
        let (d, m) = decode(block, &mut n);
        for (a, &x) in acc.iter_mut().zip(&xs) {
            a.add(&n, d, m, x, b);
        }
    }
    acc.map(Acc::total)
}

/// Nibbles layout: `d: f32, m: f32, qs: [u8; 16]`, low nibbles first; w = n d + m.
pub(crate) fn nibbles<const N: usize>(w: &[u8], xs: [QuantizedRow; N]) -> [f32; N] {
    blocks(w, xs, NIBBLES_BYTES, |b, n| {
        let (lo, hi) = n.split_at_mut(QK / 2);
        for ((l, h), &q) in lo.iter_mut().zip(hi).zip(&b[8..24]) {
            *l = i16::from(q & 0x0F);
            *h = i16::from(q >> 4);
        }
        (f32_at(b, 0), f32_at(b, 4))
    })
}

/// Bytes layout: `d: f32, qs: [i8; 32]`; w = q d.
pub(crate) fn bytes<const N: usize>(w: &[u8], xs: [QuantizedRow; N]) -> [f32; N] {
    blocks(w, xs, BYTES_BYTES, |b, n| {
        for (o, &q) in n.iter_mut().zip(&b[4..36]) {
            *o = i16::from(q as i8);
        }
        (f32_at(b, 0), 0.0)
    })
}

/// BytesMin layout: `d: f32, m: f32, qs: [i8; 32]`; w = n d + m.
pub(crate) fn bytes_min<const N: usize>(w: &[u8], xs: [QuantizedRow; N]) -> [f32; N] {
    blocks(w, xs, BYTES_MIN_BYTES, |b, n| {
        for (o, &q) in n.iter_mut().zip(&b[8..40]) {
            *o = i16::from(q as i8);
        }
        (f32_at(b, 0), f32_at(b, 4))
    })
}

/// Halves layout (Q6_K): block `k` of each super-block is the integer weights `q sc[h]`
/// (`scaled_halves`) times `d`.
pub(crate) fn halves<const N: usize>(w: &[u8], xs: [QuantizedRow; N]) -> [f32; N] {
    let mut acc = [Acc::ZERO; N];
    let mut n = [0i16; QK];
    for (s, sb) in w.chunks_exact(HALVES_BYTES).enumerate() {
        let d = f32_at(sb, 0);
        for k in 0..8 {
            scaled_halves(sb, HALVES_SCALES + 2 * k, HALVES_QS + QK * k, &mut n);
            for (a, &x) in acc.iter_mut().zip(&xs) {
                a.add(&n, d, 0.0, x, 8 * s + k);
            }
        }
    }
    acc.map(Acc::total)
}

/// The 32 weights at `b[at..]` times their half's scale (`b[sc_at + h]`) as i16: exact, `|q sc|` being at
/// most 32 (Q6_K's `|q|`) times 128. A lane of a block's product then sums 8 products of at most 4096 times
/// 32767, below 2^30: no i32 overflow.
fn scaled_halves(b: &[u8], sc_at: usize, at: usize, n: &mut [i16; QK]) {
    for (h, (o, q)) in n
        .chunks_exact_mut(HALF)
        .zip(b[at..at + QK].chunks_exact(HALF))
        .enumerate()
    {
        let sc = i16::from(b[sc_at + h] as i8);
        for (o, &q) in o.iter_mut().zip(q) {
            *o = i16::from(q as i8) * sc;
        }
    }
}

/// TwoBit layout (Q2_K): block `k` of each super-block is `q sc` (`Layout::low_bits` times the half's
/// 4-bit scale, at most 45) times `d`, plus `m` times the half's 4-bit min times the sum of the half's
/// activation codes: an integer of at most `2 * 15 * 16 * 32767` in magnitude, below 2^24, so exact in
/// f32 too.
pub(crate) fn two_bit<const N: usize>(w: &[u8], xs: [QuantizedRow; N]) -> [f32; N] {
    super_blocks(w, xs, Layout::TwoBit, TWO_BIT_BYTES)
}

/// ThreeBit layout (Q3_K): block `k` of each super-block is `q sc` (at most 4 * 32) times `d`.
pub(crate) fn three_bit<const N: usize>(w: &[u8], xs: [QuantizedRow; N]) -> [f32; N] {
    super_blocks(w, xs, Layout::ThreeBit, THREE_BIT_BYTES)
}

/// FourBit layout (Q4_K): block `k` of each super-block is a Nibbles block, its 4-bit weights times
/// `d sc[k]` plus `m mn[k]`, both made here in f32 as the Nibbles conversion once made them.
pub(crate) fn four_bit<const N: usize>(w: &[u8], xs: [QuantizedRow; N]) -> [f32; N] {
    let mut acc = [Acc::ZERO; N];
    let mut n = [0i16; QK];
    for (s, sb) in w.chunks_exact(FOUR_BIT_BYTES).enumerate() {
        for k in 0..8 {
            for (o, q) in n.iter_mut().zip(Layout::FourBit.low_bits(sb, k)) {
                *o = i16::from(q);
            }
            let (d, m) = Layout::FourBit.half_scales(sb, k, 0);
            for (a, &x) in acc.iter_mut().zip(&xs) {
                a.add(&n, d, m.unwrap_or(0.0), x, 8 * s + k);
            }
        }
    }
    acc.map(Acc::total)
}

/// The super-blocks of `w` (TwoBit or ThreeBit, `unit` bytes each) times each row of `xs`: each block's
/// integer weights made once for all `N` rows.
fn super_blocks<const N: usize>(
    w: &[u8],
    xs: [QuantizedRow; N],
    layout: Layout,
    unit: usize,
) -> [f32; N] {
    let mut acc = [Acc::ZERO; N];
    let mut n = [0i16; QK];
    for (s, sb) in w.chunks_exact(unit).enumerate() {
        let d = f32_at(sb, 0);
        let m = (layout == Layout::TwoBit).then(|| f32_at(sb, 4));
        for k in 0..8 {
            let b = 8 * s + k;
            let q = layout.low_bits(sb, k);
            let [(sc0, mn0), (sc1, mn1)] = [0, 1].map(|h| layout.half_integers(sb, k, h));
            for (l, o) in n.iter_mut().enumerate() {
                *o = i16::from(q[l]) * if l < HALF { sc0 } else { sc1 };
            }
            for (a, x) in acc.iter_mut().zip(&xs) {
                a.add_lanes(
                    lane_sums(&n, &x.codes[b * QK..(b + 1) * QK]),
                    d * x.scales[b],
                );
                if let Some(m) = m {
                    let t = mn0 * x.half_sums[2 * b] + mn1 * x.half_sums[2 * b + 1];
                    a.offset += t as f32 * (m * x.scales[b]);
                }
            }
        }
    }
    acc.map(Acc::total)
}
