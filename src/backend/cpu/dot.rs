//! Portable dot products of one weight row with one activation row, written so that LLVM vectorizes the
//! inner loops (fixed-length lanes, integer products of 32-element blocks).
//!
//! Weight rows are raw ggml blocks (layouts in `weights::quant`); activations are f32 for F32 weights and
//! [`Q8Row`] blocks for quantized ones, so a block's dot product is one integer sum times the two scales.

#![cfg_attr(
    all(target_arch = "wasm32", target_feature = "simd128"),
    // On wasm with simd128 the kernels of `dot_wasm` replace these; they remain the reference.
    allow(dead_code)
)]

use half::f16;

use super::q8::{Q8Row, QK};

/// Little-endian f16 at `at`; callers pass whole blocks, so `at + 1` is in range.
pub(crate) fn f16_at(block: &[u8], at: usize) -> f32 {
    f16::from_le_bytes([block[at], block[at + 1]]).to_f32()
}

pub(crate) fn dense(w: &[f32], x: &[f32]) -> f32 {
    // Eight independent partial sums: the lanes of two SSE / one AVX register, and no reassociation
    // needed for LLVM to vectorize.
    let mut acc = [0.0f32; 8];
    let (wc, xc) = (w.chunks_exact(8), x.chunks_exact(8));
    let tail: f32 = wc
        .remainder()
        .iter()
        .zip(xc.remainder())
        .map(|(a, b)| a * b)
        .sum();
    for (a, b) in wc.zip(xc) {
        for i in 0..8 {
            acc[i] += a[i] * b[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// `sum(w * x)` over a block of 32 signed bytes (the weight bytes are two's complement i8).
fn i8_block(w: &[u8], x: &[i8]) -> i32 {
    w.iter()
        .zip(x)
        .map(|(&a, &b)| i32::from(a as i8) * i32::from(b))
        .sum()
}

/// `sum(n * x)` where `n` are the 32 nibbles of `qs` (16 bytes), low nibbles for `x[..16]`, high ones for
/// `x[16..]`: the Q4_0 / Q4_1 order.
fn nibbles_split(qs: &[u8], x: &[i8]) -> i32 {
    let (lo, hi) = x.split_at(QK / 2);
    qs.iter()
        .zip(lo.iter().zip(hi))
        .map(|(&q, (&l, &h))| i32::from(q & 0x0F) * i32::from(l) + i32::from(q >> 4) * i32::from(h))
        .sum()
}

/// `sum(n * x)` where `n` are the nibbles at `shift` (0 or 4) of 32 bytes: a Q4_K sub-block.
fn nibbles_at(qs: &[u8], shift: u32, x: &[i8]) -> i32 {
    qs.iter()
        .zip(x)
        .map(|(&q, &v)| i32::from((q >> shift) & 0x0F) * i32::from(v))
        .sum()
}

/// Q8_0: `d: f16, qs: [i8; 32]`.
pub(crate) fn q8_0(w: &[u8], x: Q8Row) -> f32 {
    let mut acc = 0.0;
    for ((b, xq), &xd) in w.chunks_exact(34).zip(x.q.chunks_exact(QK)).zip(x.d) {
        acc += f16_at(b, 0) * xd * i8_block(&b[2..34], xq) as f32;
    }
    acc
}

/// Q4_0: `d: f16, qs: [u8; 16]`, w = (n - 8) d, so w.x = d (dx sum(n q) - 8 sx).
pub(crate) fn q4_0(w: &[u8], x: Q8Row) -> f32 {
    let mut acc = 0.0;
    let scales = x.d.iter().zip(x.s);
    for ((b, xq), (&xd, &xs)) in w.chunks_exact(18).zip(x.q.chunks_exact(QK)).zip(scales) {
        let d = f16_at(b, 0);
        acc += d * (xd * nibbles_split(&b[2..18], xq) as f32 - 8.0 * xs);
    }
    acc
}

/// Q4_1: `d: f16, m: f16, qs: [u8; 16]`, w = n d + m, so w.x = d dx sum(n q) + m sx.
pub(crate) fn q4_1(w: &[u8], x: Q8Row) -> f32 {
    let mut acc = 0.0;
    let scales = x.d.iter().zip(x.s);
    for ((b, xq), (&xd, &xs)) in w.chunks_exact(20).zip(x.q.chunks_exact(QK)).zip(scales) {
        let (d, m) = (f16_at(b, 0), f16_at(b, 2));
        acc += d * xd * nibbles_split(&b[4..20], xq) as f32 + m * xs;
    }
    acc
}

/// Unpacks the 8 six-bit (scale, min) pairs of a Q4_K super-block from its 12 scale bytes.
pub(crate) fn k_scales(s: &[u8]) -> ([u8; 8], [u8; 8]) {
    let (mut sc, mut mn) = ([0u8; 8], [0u8; 8]);
    for j in 0..4 {
        sc[j] = s[j] & 0x3F;
        mn[j] = s[j + 4] & 0x3F;
        sc[j + 4] = (s[j + 8] & 0x0F) | ((s[j] >> 2) & 0x30);
        mn[j + 4] = (s[j + 8] >> 4) | ((s[j + 4] >> 2) & 0x30);
    }
    (sc, mn)
}

/// Q4_K: super-blocks of 256 = 8 sub-blocks of 32, `d, dmin: f16, scales: [u8; 12], qs: [u8; 128]`;
/// sub-blocks 2c and 2c+1 are the low and high nibbles of `qs[32c..32c + 32]`; w = d sc n - dmin mn.
pub(crate) fn q4_k(w: &[u8], x: Q8Row) -> f32 {
    let mut acc = 0.0;
    let xs =
        x.q.chunks_exact(8 * QK)
            .zip(x.d.chunks_exact(8).zip(x.s.chunks_exact(8)));
    for (b, (xq, (xd, xsum))) in w.chunks_exact(144).zip(xs) {
        let (d, dmin) = (f16_at(b, 0), f16_at(b, 2));
        let (sc, mn) = k_scales(&b[4..16]);
        let qs = &b[16..144];
        let (mut dots, mut mins) = (0.0f32, 0.0f32);
        for sub in 0..8 {
            let bytes = &qs[32 * (sub / 2)..32 * (sub / 2) + 32];
            let n = nibbles_at(bytes, 4 * (sub as u32 % 2), &xq[sub * QK..(sub + 1) * QK]);
            dots += f32::from(sc[sub]) * xd[sub] * n as f32;
            mins += f32::from(mn[sub]) * xsum[sub];
        }
        acc += d * dots - dmin * mins;
    }
    acc
}
