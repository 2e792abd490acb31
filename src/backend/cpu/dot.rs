//! Portable dot products of one weight row with activation rows, written so that LLVM vectorizes the
//! inner loops natively; on wasm with simd128 `dot_wasm` replaces them with bit-identical results.
//!
//! Quantized weight rows are blocks in a kernel layout (`blocks`) and activations are i16 blocks
//! (`activations`): a block's integer weights times the activation codes is an exact integer sum,
//! scaled once by the block's weight and activation scales; the block's offset `m` adds `m` times the
//! activations' block sum. The dense product is plain f32.

#![cfg_attr(
    all(target_arch = "wasm32", target_feature = "simd128"),
    // On wasm with simd128 the kernels of `dot_wasm` replace these; they remain the reference.
    allow(dead_code)
)]

use super::activations::QuantizedRow;
use super::blocks::{f32_at, BYTES_BYTES, NIBBLES_BYTES};

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
        // Exact integer sums, so their order is free; pairs of products as wasm's lanes (and x86's
        // pmaddwd, which LLVM can then use).
        let mut s = [0i32; 4];
        let codes = &x.codes[b * QK..(b + 1) * QK];
        for (wc, xc) in n.chunks_exact(8).zip(codes.chunks_exact(8)) {
            for j in 0..4 {
                s[j] += i32::from(wc[2 * j]) * i32::from(xc[2 * j])
                    + i32::from(wc[2 * j + 1]) * i32::from(xc[2 * j + 1]);
            }
        }
        let scale = d * x.scales[b];
        for (lane, sj) in self.lanes.iter_mut().zip(s) {
            *lane += sj as f32 * scale;
        }
        self.offset += m * x.sums[b];
    }

    fn total(self) -> f32 {
        let l = self.lanes;
        (l[0] + l[1]) + (l[2] + l[3]) + self.offset
    }
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
