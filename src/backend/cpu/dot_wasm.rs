//! The dot products of `dot` with wasm SIMD (simd128): 4 f32 lanes for F32 rows; for quantized rows,
//! 16 bytes widened to i16 and multiplied pairwise into i32 lanes (`i32x4.dot_i16x8_s`), with each
//! block's integer sums scaled into f32 lanes so that only the row's end needs a horizontal sum.
//!
//! Compiled only for `wasm32` with `target_feature = "simd128"`, where these intrinsics are safe
//! functions; the load is the one `unsafe` operation, in `load`.

use core::arch::wasm32::*;

use super::dot::{f16_at, k_scales};
use super::q8::{Q8Row, QK};

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

/// Pairwise products of two vectors of 16 signed bytes, summed into 4 i32 lanes.
fn dot_i8x16(a: v128, b: v128) -> v128 {
    let lo = i32x4_dot_i16x8(i16x8_extend_low_i8x16(a), i16x8_extend_low_i8x16(b));
    let hi = i32x4_dot_i16x8(i16x8_extend_high_i8x16(a), i16x8_extend_high_i8x16(b));
    i32x4_add(lo, hi)
}

/// `acc + isum * scale`, lane-wise in f32.
fn scaled(acc: v128, isum: v128, scale: f32) -> v128 {
    f32x4_add(
        acc,
        f32x4_mul(f32x4_convert_i32x4(isum), f32x4_splat(scale)),
    )
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

pub(crate) fn q8_0(w: &[u8], x: Q8Row) -> f32 {
    let mut acc = f32x4_splat(0.0);
    for ((b, xq), &xd) in w.chunks_exact(34).zip(x.q.chunks_exact(QK)).zip(x.d) {
        let isum = i32x4_add(
            dot_i8x16(load(b, 2), load(xq, 0)),
            dot_i8x16(load(b, 18), load(xq, 16)),
        );
        acc = scaled(acc, isum, f16_at(b, 0) * xd);
    }
    hsum_f32(acc)
}

/// `sum(n * x)` of a Q4_0 / Q4_1 block: the low nibbles of `qs` against `x[..16]`, the high ones against
/// `x[16..]`. Nibbles (0..15) are also valid signed bytes, so the signed widening applies.
fn nibbles_split(qs: v128, xq: &[i8]) -> v128 {
    let lo = v128_and(qs, u8x16_splat(0x0F));
    let hi = u8x16_shr(qs, 4);
    i32x4_add(dot_i8x16(lo, load(xq, 0)), dot_i8x16(hi, load(xq, 16)))
}

pub(crate) fn q4_0(w: &[u8], x: Q8Row) -> f32 {
    let (mut acc, mut offsets) = (f32x4_splat(0.0), 0.0);
    let scales = x.d.iter().zip(x.s);
    for ((b, xq), (&xd, &xs)) in w.chunks_exact(18).zip(x.q.chunks_exact(QK)).zip(scales) {
        let d = f16_at(b, 0);
        acc = scaled(acc, nibbles_split(load(b, 2), xq), d * xd);
        offsets += d * xs;
    }
    hsum_f32(acc) - 8.0 * offsets
}

pub(crate) fn q4_1(w: &[u8], x: Q8Row) -> f32 {
    let (mut acc, mut offsets) = (f32x4_splat(0.0), 0.0);
    let scales = x.d.iter().zip(x.s);
    for ((b, xq), (&xd, &xs)) in w.chunks_exact(20).zip(x.q.chunks_exact(QK)).zip(scales) {
        let (d, m) = (f16_at(b, 0), f16_at(b, 2));
        acc = scaled(acc, nibbles_split(load(b, 4), xq), d * xd);
        offsets += m * xs;
    }
    hsum_f32(acc) + offsets
}

pub(crate) fn q4_k(w: &[u8], x: Q8Row) -> f32 {
    let (mut acc, mut mins) = (f32x4_splat(0.0), 0.0);
    let mask = u8x16_splat(0x0F);
    let xs =
        x.q.chunks_exact(8 * QK)
            .zip(x.d.chunks_exact(8).zip(x.s.chunks_exact(8)));
    for (b, (xq, (xd, xsum))) in w.chunks_exact(144).zip(xs) {
        let (d, dmin) = (f16_at(b, 0), f16_at(b, 2));
        let (sc, mn) = k_scales(&b[4..16]);
        for pair in 0..4 {
            // Sub-blocks 2c (low nibbles) and 2c + 1 (high nibbles) share 32 bytes of qs.
            let (q0, q1) = (load(b, 16 + 32 * pair), load(b, 32 + 32 * pair));
            for (half, sub) in [(0, 2 * pair), (1, 2 * pair + 1)] {
                let (n0, n1) = if half == 0 {
                    (v128_and(q0, mask), v128_and(q1, mask))
                } else {
                    (u8x16_shr(q0, 4), u8x16_shr(q1, 4))
                };
                let xs = &xq[sub * QK..];
                let isum = i32x4_add(dot_i8x16(n0, load(xs, 0)), dot_i8x16(n1, load(xs, 16)));
                acc = scaled(acc, isum, d * f32::from(sc[sub]) * xd[sub]);
                mins += dmin * f32::from(mn[sub]) * xsum[sub];
            }
        }
    }
    hsum_f32(acc) - mins
}
