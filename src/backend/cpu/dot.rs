//! Portable dot products of one weight row with one f32 activation row, written so that LLVM vectorizes
//! the inner loops (fixed 8-lane accumulators, no reassociation needed).
//!
//! Weight rows are raw ggml blocks (layouts in `weights::quant`). Each block is decoded into 32 f32
//! weights with the dequantizer's own arithmetic, then multiplied with the activations: the result equals
//! the dequantized f32 product up to summation order. (Quantizing the activations to 8 bits as llama.cpp
//! does moved SmolLM2's logits by up to 0.47 and flipped a greedy token whose margin was 0.08.)

#![cfg_attr(
    all(target_arch = "wasm32", target_feature = "simd128"),
    // On wasm with simd128 the kernels of `dot_wasm` replace these; they remain the reference.
    allow(dead_code)
)]

use half::f16;

/// Elements per block of Q8_0, Q4_0, Q4_1 and per sub-block of Q4_K.
pub(crate) const QK: usize = 32;

/// Little-endian f16 at `at`; callers pass whole blocks, so `at + 1` is in range.
pub(crate) fn f16_at(block: &[u8], at: usize) -> f32 {
    f16::from_le_bytes([block[at], block[at + 1]]).to_f32()
}

/// `acc[i % 8] += w[i] * x[i]`.
fn fma_lanes(acc: &mut [f32; 8], w: &[f32], x: &[f32]) {
    for (a, b) in w.chunks_exact(8).zip(x.chunks_exact(8)) {
        for i in 0..8 {
            acc[i] += a[i] * b[i];
        }
    }
}

pub(crate) fn dense(w: &[f32], x: &[f32]) -> f32 {
    let mut acc = [0.0f32; 8];
    fma_lanes(&mut acc, w, x);
    let main = w.len() / 8 * 8;
    let tail: f32 = w[main..].iter().zip(&x[main..]).map(|(a, b)| a * b).sum();
    acc.iter().sum::<f32>() + tail
}

/// Sums the blocks of `w` (each `block_bytes` long, decoded by `decode`) times each row of `xs`: a block
/// is decoded once for all `N` rows, and each row sees the same operations in the same order as with
/// `N = 1`, so a token's result does not depend on how many tokens share the pass.
fn blocks<const N: usize>(
    w: &[u8],
    xs: [&[f32]; N],
    block_bytes: usize,
    decode: impl Fn(&[u8], &mut [f32; QK]),
) -> [f32; N] {
    let mut acc = [[0.0f32; 8]; N];
    let mut wf = [0.0f32; QK];
    for (i, b) in w.chunks_exact(block_bytes).enumerate() {
        decode(b, &mut wf);
        for (a, x) in acc.iter_mut().zip(xs) {
            fma_lanes(a, &wf, &x[i * QK..(i + 1) * QK]);
        }
    }
    acc.map(|a| a.iter().sum())
}

/// Q8_0: `d: f16, qs: [i8; 32]`; w = q d.
pub(crate) fn q8_0<const N: usize>(w: &[u8], xs: [&[f32]; N]) -> [f32; N] {
    blocks(w, xs, 34, |b, out| {
        let d = f16_at(b, 0);
        for (o, &q) in out.iter_mut().zip(&b[2..34]) {
            *o = f32::from(q as i8) * d;
        }
    })
}

/// Q4_0: `d: f16, qs: [u8; 16]`, low nibbles first; w = (n - 8) d.
pub(crate) fn q4_0<const N: usize>(w: &[u8], xs: [&[f32]; N]) -> [f32; N] {
    blocks(w, xs, 18, |b, out| {
        let d = f16_at(b, 0);
        let (lo, hi) = out.split_at_mut(QK / 2);
        for ((l, h), &q) in lo.iter_mut().zip(hi).zip(&b[2..18]) {
            *l = f32::from((q & 0x0F) as i8 - 8) * d;
            *h = f32::from((q >> 4) as i8 - 8) * d;
        }
    })
}

/// Q4_1: `d: f16, m: f16, qs: [u8; 16]`, low nibbles first; w = n d + m.
pub(crate) fn q4_1<const N: usize>(w: &[u8], xs: [&[f32]; N]) -> [f32; N] {
    blocks(w, xs, 20, |b, out| {
        let (d, m) = (f16_at(b, 0), f16_at(b, 2));
        let (lo, hi) = out.split_at_mut(QK / 2);
        for ((l, h), &q) in lo.iter_mut().zip(hi).zip(&b[4..20]) {
            *l = d * f32::from(q & 0x0F) + m;
            *h = d * f32::from(q >> 4) + m;
        }
    })
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
/// sub-blocks 2c and 2c+1 are the low and high nibbles of `qs[32c..32c + 32]`; w = (d sc) n - dmin mn.
pub(crate) fn q4_k<const N: usize>(w: &[u8], xs: [&[f32]; N]) -> [f32; N] {
    let mut acc = [[0.0f32; 8]; N];
    let mut wf = [0.0f32; QK];
    for (i, b) in w.chunks_exact(144).enumerate() {
        let (d, dmin) = (f16_at(b, 0), f16_at(b, 2));
        let (sc, mn) = k_scales(&b[4..16]);
        for sub in 0..8 {
            let (dl, ml) = (d * f32::from(sc[sub]), dmin * f32::from(mn[sub]));
            let bytes = &b[16 + 32 * (sub / 2)..16 + 32 * (sub / 2) + 32];
            let shift = 4 * (sub % 2);
            for (o, &q) in wf.iter_mut().zip(bytes) {
                *o = dl * f32::from((q >> shift) & 0x0F) - ml;
            }
            let at = (8 * i + sub) * QK;
            for (a, x) in acc.iter_mut().zip(xs) {
                fma_lanes(a, &wf, &x[at..at + QK]);
            }
        }
    }
    acc.map(|a| a.iter().sum())
}
