//! The dot products of `dot` with wasm SIMD (simd128): quantized blocks are widened 16 bytes at a time
//! into four f32x4 vectors, scaled exactly as the dequantizer does, and multiplied into f32x4
//! accumulators, so that only the row's end needs a horizontal sum.
//!
//! Compiled only for `wasm32` with `target_feature = "simd128"`, where these intrinsics are safe
//! functions; the load is the one `unsafe` operation, in `load`.

use core::arch::wasm32::*;

use super::dot::{f16_at, k_scales, QK};

/// Element types a v128 is loaded from: plain numbers (no padding, every bit pattern valid).
trait Lane: Copy {
    /// Elements in 16 bytes.
    const PER_V128: usize;
}

impl Lane for u8 {
    const PER_V128: usize = 16;
}

impl Lane for i8 {
    const PER_V128: usize = 16;
}

impl Lane for f32 {
    const PER_V128: usize = 4;
}

/// The 16 bytes of `b` starting at element `at`.
fn load<T: Lane>(b: &[T], at: usize) -> v128 {
    let chunk = &b[at..at + T::PER_V128];
    // SAFETY: the index above panics unless `chunk` holds `PER_V128` elements, which are 16 initialized
    // bytes (the `Lane` types have no padding). `v128_load` reads unaligned (wasm's v128.load has no
    // alignment requirement), and any 16 bytes are a valid v128.
    unsafe { v128_load(chunk.as_ptr().cast::<v128>()) }
}

fn hsum_f32(v: v128) -> f32 {
    f32x4_extract_lane::<0>(v)
        + f32x4_extract_lane::<1>(v)
        + f32x4_extract_lane::<2>(v)
        + f32x4_extract_lane::<3>(v)
}

/// 16 unsigned bytes as four f32x4.
fn u8_to_f32(n: v128) -> [v128; 4] {
    let (lo, hi) = (u16x8_extend_low_u8x16(n), u16x8_extend_high_u8x16(n));
    [
        f32x4_convert_u32x4(u32x4_extend_low_u16x8(lo)),
        f32x4_convert_u32x4(u32x4_extend_high_u16x8(lo)),
        f32x4_convert_u32x4(u32x4_extend_low_u16x8(hi)),
        f32x4_convert_u32x4(u32x4_extend_high_u16x8(hi)),
    ]
}

/// 16 signed bytes as four f32x4.
fn i8_to_f32(n: v128) -> [v128; 4] {
    let (lo, hi) = (i16x8_extend_low_i8x16(n), i16x8_extend_high_i8x16(n));
    [
        f32x4_convert_i32x4(i32x4_extend_low_i16x8(lo)),
        f32x4_convert_i32x4(i32x4_extend_high_i16x8(lo)),
        f32x4_convert_i32x4(i32x4_extend_low_i16x8(hi)),
        f32x4_convert_i32x4(i32x4_extend_high_i16x8(hi)),
    ]
}

/// The 16 weights `n d + m`, from 16 values widened to f32.
fn scale16(n: [v128; 4], d: v128, m: v128) -> [v128; 4] {
    n.map(|nk| f32x4_add(f32x4_mul(nk, d), m))
}

/// `acc[t] += w x` over 16 elements of each row `xs[t]`, starting at element `at`. Each row gets the same
/// operations in the same order whatever `N` is, so a token's result does not depend on how many tokens
/// share the pass.
fn fma16<const N: usize>(acc: &mut [v128; N], w: [v128; 4], xs: [&[f32]; N], at: usize) {
    for (a, x) in acc.iter_mut().zip(xs) {
        for (k, wk) in w.iter().enumerate() {
            *a = f32x4_add(*a, f32x4_mul(*wk, load(x, at + 4 * k)));
        }
    }
}

pub(crate) fn dense(w: &[f32], x: &[f32]) -> f32 {
    let mut acc = [f32x4_splat(0.0); 4];
    let main = w.len() / 16 * 16;
    for i in (0..main).step_by(16) {
        for (k, a) in acc.iter_mut().enumerate() {
            let at = i + 4 * k;
            *a = f32x4_add(*a, f32x4_mul(load(w, at), load(x, at)));
        }
    }
    let tail: f32 = w[main..].iter().zip(&x[main..]).map(|(a, b)| a * b).sum();
    hsum_f32(f32x4_add(
        f32x4_add(acc[0], acc[1]),
        f32x4_add(acc[2], acc[3]),
    )) + tail
}

pub(crate) fn q8_0<const N: usize>(w: &[u8], xs: [&[f32]; N]) -> [f32; N] {
    let (mut acc, zero) = ([f32x4_splat(0.0); N], f32x4_splat(0.0));
    for (i, b) in w.chunks_exact(34).enumerate() {
        let d = f32x4_splat(f16_at(b, 0));
        fma16(
            &mut acc,
            scale16(i8_to_f32(load(b, 2)), d, zero),
            xs,
            i * QK,
        );
        fma16(
            &mut acc,
            scale16(i8_to_f32(load(b, 18)), d, zero),
            xs,
            i * QK + 16,
        );
    }
    acc.map(hsum_f32)
}

pub(crate) fn q4_0<const N: usize>(w: &[u8], xs: [&[f32]; N]) -> [f32; N] {
    let (mut acc, zero) = ([f32x4_splat(0.0); N], f32x4_splat(0.0));
    let (mask, eight) = (u8x16_splat(0x0F), i8x16_splat(8));
    for (i, b) in w.chunks_exact(18).enumerate() {
        let d = f32x4_splat(f16_at(b, 0));
        let qs = load(b, 2);
        let lo = i8x16_sub(v128_and(qs, mask), eight);
        let hi = i8x16_sub(u8x16_shr(qs, 4), eight);
        fma16(&mut acc, scale16(i8_to_f32(lo), d, zero), xs, i * QK);
        fma16(&mut acc, scale16(i8_to_f32(hi), d, zero), xs, i * QK + 16);
    }
    acc.map(hsum_f32)
}

pub(crate) fn q4_1<const N: usize>(w: &[u8], xs: [&[f32]; N]) -> [f32; N] {
    let mut acc = [f32x4_splat(0.0); N];
    let mask = u8x16_splat(0x0F);
    for (i, b) in w.chunks_exact(20).enumerate() {
        let (d, m) = (f32x4_splat(f16_at(b, 0)), f32x4_splat(f16_at(b, 2)));
        let qs = load(b, 4);
        fma16(
            &mut acc,
            scale16(u8_to_f32(v128_and(qs, mask)), d, m),
            xs,
            i * QK,
        );
        fma16(
            &mut acc,
            scale16(u8_to_f32(u8x16_shr(qs, 4)), d, m),
            xs,
            i * QK + 16,
        );
    }
    acc.map(hsum_f32)
}

pub(crate) fn q4_k<const N: usize>(w: &[u8], xs: [&[f32]; N]) -> [f32; N] {
    let mut acc = [f32x4_splat(0.0); N];
    let mask = u8x16_splat(0x0F);
    for (i, b) in w.chunks_exact(144).enumerate() {
        let (d, dmin) = (f16_at(b, 0), f16_at(b, 2));
        let (sc, mn) = k_scales(&b[4..16]);
        for sub in 0..8 {
            // Sub-blocks 2c (low nibbles) and 2c + 1 (high nibbles) share 32 bytes of qs.
            let at = 16 + 32 * (sub / 2);
            let (q0, q1) = (load(b, at), load(b, at + 16));
            let (n0, n1) = if sub % 2 == 0 {
                (v128_and(q0, mask), v128_and(q1, mask))
            } else {
                (u8x16_shr(q0, 4), u8x16_shr(q1, 4))
            };
            let dl = f32x4_splat(d * f32::from(sc[sub]));
            let ml = f32x4_splat(-(dmin * f32::from(mn[sub])));
            let x = (8 * i + sub) * QK;
            fma16(&mut acc, scale16(u8_to_f32(n0), dl, ml), xs, x);
            fma16(&mut acc, scale16(u8_to_f32(n1), dl, ml), xs, x + 16);
        }
    }
    acc.map(hsum_f32)
}
