//! The dot products of `dot` with wasm SIMD (simd128): a quantized block's 32 integer weights are widened
//! to four i16x8 and multiplied with the activations' i16 codes by `i32x4.dot_i16x8_s` (eight
//! multiply-adds per instruction, exact), then scaled once per block into f32x4 accumulators.
//!
//! Compiled only for `wasm32` with `target_feature = "simd128"`, where these intrinsics are safe
//! functions; the load is the one `unsafe` operation, in `load`.

use core::arch::wasm32::*;

use super::activations::QuantizedRow;
use super::blocks::{f32_at, BYTES_BYTES, NIBBLES_BYTES};
use super::dot::{tail_dot, QK};

/// Element types a v128 is loaded from: plain numbers (no padding, every bit pattern valid).
trait Lane: Copy {
    /// Elements in 16 bytes.
    const PER_V128: usize;
}

impl Lane for u8 {
    const PER_V128: usize = 16;
}

impl Lane for i16 {
    const PER_V128: usize = 8;
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

/// Per-row accumulators: the four f32 lanes of scaled block products and the offset terms, as in
/// `dot::Acc`, whose operations these repeat lane for lane (bit-identical results).
#[derive(Clone, Copy)]
struct Acc {
    lanes: v128,
    offset: f32,
}

impl Acc {
    fn zero() -> Acc {
        Acc {
            lanes: f32x4_splat(0.0),
            offset: 0.0,
        }
    }

    /// Adds block `b` of `x` times the block `n d + m`: `n` is 32 integer weights in four i16x8.
    fn add(&mut self, n: &[v128; 4], d: f32, m: f32, x: QuantizedRow, b: usize) {
        let c = &x.codes[b * QK..(b + 1) * QK];
        let s = i32x4_add(
            i32x4_add(
                i32x4_dot_i16x8(n[0], load(c, 0)),
                i32x4_dot_i16x8(n[1], load(c, 8)),
            ),
            i32x4_add(
                i32x4_dot_i16x8(n[2], load(c, 16)),
                i32x4_dot_i16x8(n[3], load(c, 24)),
            ),
        );
        let scale = f32x4_splat(d * x.scales[b]);
        self.lanes = f32x4_add(self.lanes, f32x4_mul(f32x4_convert_i32x4(s), scale));
        self.offset += m * x.sums[b];
    }

    fn total(self) -> f32 {
        let l = self.lanes;
        (f32x4_extract_lane::<0>(l) + f32x4_extract_lane::<1>(l))
            + (f32x4_extract_lane::<2>(l) + f32x4_extract_lane::<3>(l))
            + self.offset
    }
}

/// 16 unsigned bytes (below 128) as two i16x8.
fn widen_u8(n: v128) -> [v128; 2] {
    [u16x8_extend_low_u8x16(n), u16x8_extend_high_u8x16(n)]
}

/// 16 signed bytes as two i16x8.
fn widen_i8(n: v128) -> [v128; 2] {
    [i16x8_extend_low_i8x16(n), i16x8_extend_high_i8x16(n)]
}

fn join([a, b]: [v128; 2], [c, d]: [v128; 2]) -> [v128; 4] {
    [a, b, c, d]
}

/// Sums the blocks of `w` (each `block_bytes` long; `decode` gives its 32 integer weights, scale and
/// offset) times each row of `xs`, a block decoded once for all `N` rows, as `dot::blocks`.
fn blocks<const N: usize>(
    w: &[u8],
    xs: [QuantizedRow; N],
    block_bytes: usize,
    decode: impl Fn(&[u8]) -> ([v128; 4], f32, f32),
) -> [f32; N] {
    let mut acc = [Acc::zero(); N];
    for (b, block) in w.chunks_exact(block_bytes).enumerate() {
        let (n, d, m) = decode(block);
        for (a, &x) in acc.iter_mut().zip(&xs) {
            a.add(&n, d, m, x, b);
        }
    }
    acc.map(Acc::total)
}

/// One f32 weight row times `N` activation rows: four f32x4 accumulators per row, each weight vector
/// loaded once for all rows, and each row's operations the same whatever `N` is.
pub(crate) fn dense<const N: usize>(w: &[f32], xs: [&[f32]; N]) -> [f32; N] {
    let mut acc = [[f32x4_splat(0.0); 4]; N];
    let main = w.len() / 16 * 16;
    for i in (0..main).step_by(16) {
        let wv = [load(w, i), load(w, i + 4), load(w, i + 8), load(w, i + 12)];
        for (a, x) in acc.iter_mut().zip(xs) {
            let xc = &x[i..i + 16];
            for (k, ak) in a.iter_mut().enumerate() {
                *ak = f32x4_add(*ak, f32x4_mul(wv[k], load(xc, 4 * k)));
            }
        }
    }
    std::array::from_fn(|t| {
        let a = acc[t];
        hsum_f32(f32x4_add(f32x4_add(a[0], a[1]), f32x4_add(a[2], a[3]))) + tail_dot(w, xs[t], main)
    })
}

pub(crate) fn nibbles<const N: usize>(w: &[u8], xs: [QuantizedRow; N]) -> [f32; N] {
    let mask = u8x16_splat(0x0F);
    blocks(w, xs, NIBBLES_BYTES, |b| {
        let qs = load(b, 8);
        let n = join(widen_u8(v128_and(qs, mask)), widen_u8(u8x16_shr(qs, 4)));
        (n, f32_at(b, 0), f32_at(b, 4))
    })
}

pub(crate) fn bytes<const N: usize>(w: &[u8], xs: [QuantizedRow; N]) -> [f32; N] {
    blocks(w, xs, BYTES_BYTES, |b| {
        let n = join(widen_i8(load(b, 4)), widen_i8(load(b, 20)));
        (n, f32_at(b, 0), 0.0)
    })
}
