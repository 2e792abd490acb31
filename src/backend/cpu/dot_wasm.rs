//! The dot products of `dot` with wasm SIMD (simd128): a quantized block's 32 integer weights are widened
//! to four i16x8 and multiplied with the activations' i16 codes by `i32x4.dot_i16x8_s` (eight
//! multiply-adds per instruction, exact), then scaled once per block into f32x4 accumulators.
//!
//! The f32 kernels (`dense`, `tile`, `weighted_sum`) repeat `dot`'s operations lane for lane, except
//! that in the relaxed-SIMD build each multiply-add may be fused (`madd`).
//!
//! Compiled only for `wasm32` with `target_feature = "simd128"`, where these intrinsics are safe
//! functions; the loads and stores are the `unsafe` operations, each with its proof.

use core::arch::wasm32::*;

use super::activations::QuantizedRow;
use super::blocks::{
    f32_at, Layout, BYTES_BYTES, BYTES_MIN_BYTES, FOUR_BIT_BYTES, FOUR_BIT_QS, FOUR_BIT_SCALES,
    HALF, HALVES_BYTES, HALVES_QS, HALVES_SCALES, NIBBLES_BYTES, THREE_BIT_BYTES, THREE_BIT_HMASK,
    THREE_BIT_QS, THREE_BIT_SCALES, TWO_BIT_BYTES, TWO_BIT_QS, TWO_BIT_SCALES,
};
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

/// `acc + a b`, lane by lane. In the relaxed-SIMD build (`relaxed-simd`, for engines that have it) one
/// `f32x4.relaxed_madd`, which engines on FMA hardware fuse (one rounding instead of two, and 7-18%
/// less prefill `matmul` time on a SmolLM2 prompt in Chromium); two instructions otherwise. A module
/// makes the same choice for every call, so a value still does not depend on the tile, the group or the
/// thread that computes it.
#[inline(always)]
fn madd(acc: v128, a: v128, b: v128) -> v128 {
    #[cfg(target_feature = "relaxed-simd")]
    return f32x4_relaxed_madd(a, b, acc);
    #[cfg(not(target_feature = "relaxed-simd"))]
    f32x4_add(acc, f32x4_mul(a, b))
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

    /// Adds the block `c` of activation codes (scale `xs`, sum `xsum`) times the block `n d + m`: `n`
    /// is 32 integer weights in four i16x8. Arrays, not slices: their loads need no bounds checks, which
    /// were a third of a decoding token's instructions.
    fn add(&mut self, n: &[v128; 4], d: f32, m: f32, c: &[i16; QK], xs: f32, xsum: f32) {
        self.add_lanes(product(n, c), d * xs);
        self.offset += m * xsum;
    }

    /// Adds exact integer lane sums times `scale`.
    fn add_lanes(&mut self, s: v128, scale: f32) {
        self.lanes = f32x4_add(
            self.lanes,
            f32x4_mul(f32x4_convert_i32x4(s), f32x4_splat(scale)),
        );
    }

    fn total(self) -> f32 {
        let l = self.lanes;
        (f32x4_extract_lane::<0>(l) + f32x4_extract_lane::<1>(l))
            + (f32x4_extract_lane::<2>(l) + f32x4_extract_lane::<3>(l))
            + self.offset
    }
}

/// The exact lane sums of 32 integer weights (four i16x8) times a block of codes.
fn product(n: &[v128; 4], c: &[i16; QK]) -> v128 {
    i32x4_add(
        i32x4_add(
            i32x4_dot_i16x8(n[0], load(c, 0)),
            i32x4_dot_i16x8(n[1], load(c, 8)),
        ),
        i32x4_add(
            i32x4_dot_i16x8(n[2], load(c, 16)),
            i32x4_dot_i16x8(n[3], load(c, 24)),
        ),
    )
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

/// Sums the blocks of `w` (each `B` bytes; `decode` gives its 32 integer weights, scale and offset)
/// times each row of `xs`, a block decoded once for all `N` rows, as `dot::blocks`.
fn blocks<const N: usize, const B: usize>(
    w: &[u8],
    xs: [QuantizedRow; N],
    decode: impl Fn(&[u8; B]) -> ([v128; 4], f32, f32),
) -> [f32; N] {
    let (w, _) = w.as_chunks::<B>();
    let codes = xs.map(|x| x.codes.as_chunks::<QK>().0);
    // A row of activations holds as many blocks as the weight row: checked once here, so that the
    // compiler can drop the loop's checks.
    assert!(xs
        .iter()
        .zip(&codes)
        .all(|(x, c)| c.len() >= w.len() && x.scales.len() >= w.len() && x.sums.len() >= w.len()));
    let mut acc = [Acc::zero(); N];
    for (b, block) in w.iter().enumerate() {
        let (n, d, m) = decode(block);
        for ((a, x), c) in acc.iter_mut().zip(&xs).zip(&codes) {
            a.add(&n, d, m, &c[b], x.scales[b], x.sums[b]);
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
                *ak = madd(*ak, wv[k], load(xc, 4 * k));
            }
        }
    }
    std::array::from_fn(|t| {
        let a = acc[t];
        hsum_f32(f32x4_add(f32x4_add(a[0], a[1]), f32x4_add(a[2], a[3]))) + tail_dot(w, xs[t], main)
    })
}

/// `R` f32 weight rows times `T` activation rows as `dot::tile`, lane for lane: one f32x4 accumulator
/// per `(r, t)`.
pub(crate) fn tile<const R: usize, const T: usize>(
    ws: [&[f32]; R],
    xs: [&[f32]; T],
) -> [[f32; T]; R] {
    let mut acc = [[f32x4_splat(0.0); T]; R];
    let len = ws.first().map_or(0, |w| w.len());
    let main = len / 4 * 4;
    // Every row is `len` long (checked here once, so that the loop's loads need no bounds checks).
    assert!(ws.iter().all(|w| w.len() == len) && xs.iter().all(|x| x.len() == len));
    let wp: [*const v128; R] = std::array::from_fn(|r| ws[r].as_ptr().cast());
    let xp: [*const v128; T] = std::array::from_fn(|t| xs[t].as_ptr().cast());
    for k in 0..main / 4 {
        // SAFETY: `4 k + 4 <= main <= len` and every row holds `len` initialized f32 (asserted above), so
        // each load reads the 16 bytes of elements 4 k..4 k + 4 inside its row; v128.load has no
        // alignment requirement.
        let wv: [v128; R] = std::array::from_fn(|r| unsafe { v128_load(wp[r].add(k)) });
        let xv: [v128; T] = std::array::from_fn(|t| unsafe { v128_load(xp[t].add(k)) });
        for (a, w) in acc.iter_mut().zip(wv) {
            for (at, x) in a.iter_mut().zip(xv) {
                *at = madd(*at, w, x);
            }
        }
    }
    std::array::from_fn(|r| {
        std::array::from_fn(|t| {
            let l = acc[r][t];
            (f32x4_extract_lane::<0>(l) + f32x4_extract_lane::<1>(l))
                + (f32x4_extract_lane::<2>(l) + f32x4_extract_lane::<3>(l))
                + tail_dot(ws[r], xs[t], main)
        })
    })
}

/// `outs[t][d] += ps[t][s] * rows(s)[d]` as `dot::weighted_sum`, value for value: `4 V` values of the
/// `N` outputs at a time (`N V` f32x4 accumulators), every row read once for all `N`.
pub(crate) fn weighted_sum<const N: usize, const V: usize>(
    ps: [&[f32]; N],
    base: &[f32],
    stride: usize,
    outs: [&mut [f32]; N],
) {
    let len = ps.first().map_or(0, |p| p.len());
    let width = outs.first().map_or(0, |o| o.len());
    // Every weight list is `len` long, every output `width`, and `base` holds `len` rows of `stride`
    // with `width` values each (checked once, so that the loop's loads need no bounds checks).
    assert!(ps.iter().all(|p| p.len() == len) && outs.iter().all(|o| o.len() == width));
    assert!(len == 0 || (len - 1) * stride + width <= base.len());
    let step = 4 * V;
    let main = width / step * step;
    let mut outs = outs;
    let pp: [*const f32; N] = ps.map(<[f32]>::as_ptr);
    for d in (0..main).step_by(step) {
        let mut acc: [[v128; V]; N] =
            std::array::from_fn(|t| std::array::from_fn(|j| load(&*outs[t], d + 4 * j)));
        for s in 0..len {
            // SAFETY: `s < len` and `d + 4 V <= width`, so the row's `4 V` values at `d` lie inside
            // `base` (asserted above); v128.load has no alignment requirement.
            let v: [v128; V] = std::array::from_fn(|j| unsafe {
                v128_load(base.as_ptr().add(s * stride + d + 4 * j).cast())
            });
            for (a, p) in acc.iter_mut().zip(pp) {
                // SAFETY: `s < len`, the length of every weight list (asserted above).
                let w = f32x4_splat(unsafe { *p.add(s) });
                for (aj, vj) in a.iter_mut().zip(v) {
                    *aj = madd(*aj, w, vj);
                }
            }
        }
        for (a, out) in acc.iter().zip(outs.iter_mut()) {
            for (j, &aj) in a.iter().enumerate() {
                store(&mut out[d + 4 * j..d + 4 * j + 4], aj);
            }
        }
    }
    if main < width {
        let rest = &base[main.min(base.len())..];
        let tails: [&mut [f32]; N] = outs.map(|o| &mut o[main..]);
        super::dot::weighted_sum::<N, 1>(ps, rest, stride, tails);
    }
}

/// `x` as softmax weights in place, as `dot::softmax`, value for value: the maximum and the sum in
/// f32x4 lanes, and `layer::exp` four values at a time with the same operations.
pub(crate) fn softmax(x: &mut [f32]) {
    let main = x.len() / 4 * 4;
    let mut lanes = f32x4_splat(f32::NEG_INFINITY);
    for k in (0..main).step_by(4) {
        lanes = f32x4_pmax(lanes, load(x, k));
    }
    let lane = |v: v128| {
        [
            f32x4_extract_lane::<0>(v),
            f32x4_extract_lane::<1>(v),
            f32x4_extract_lane::<2>(v),
            f32x4_extract_lane::<3>(v),
        ]
    };
    let m = lane(lanes);
    let mut max = m[0].max(m[1]).max(m[2].max(m[3]));
    for &v in &x[main..] {
        max = max.max(v);
    }
    let mut sums = f32x4_splat(0.0);
    let max4 = f32x4_splat(max);
    for k in (0..main).step_by(4) {
        let e = exp4(f32x4_sub(load(x, k), max4));
        store(&mut x[k..k + 4], e);
        sums = f32x4_add(sums, e);
    }
    let s = lane(sums);
    let mut sum = (s[0] + s[1]) + (s[2] + s[3]);
    for v in &mut x[main..] {
        *v = super::layer::exp(*v - max);
        sum += *v;
    }
    let sum4 = f32x4_splat(sum);
    for k in (0..main).step_by(4) {
        let v = f32x4_div(load(x, k), sum4);
        store(&mut x[k..k + 4], v);
    }
    for v in &mut x[main..] {
        *v /= sum;
    }
}

/// `layer::exp` of four values, its operations lane for lane (`f32x4.max`/`min` keep a NaN as
/// `clamp` does; `i32x4.trunc_sat` converts as `as i32` does).
fn exp4(x: v128) -> v128 {
    let c = f32x4_splat;
    let x = f32x4_min(f32x4_max(x, c(-87.0)), c(88.0));
    let n = f32x4_floor(f32x4_add(f32x4_mul(x, c(std::f32::consts::LOG2_E)), c(0.5)));
    let r = f32x4_sub(
        f32x4_sub(x, f32x4_mul(n, c(0.693_359_4))),
        f32x4_mul(n, c(-2.121_944_4e-4)),
    );
    let mut p = c(1.0 / 720.0);
    for k in [1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 1.0 / 2.0, 1.0, 1.0] {
        p = f32x4_add(c(k), f32x4_mul(r, p));
    }
    let bits = i32x4_shl(i32x4_add(i32x4_trunc_sat_f32x4(n), i32x4_splat(127)), 23);
    f32x4_mul(bits, p)
}

/// A weight row in a kernel layout as f32, as `dot::dequantize_row` (`n d + m` per weight, the same
/// roundings; the Halves, TwoBit and ThreeBit layouts with each half's `d sc` and `m mn`).
pub(crate) fn dequantize_row(layout: Layout, w: &[u8], out: &mut [f32]) {
    let mask = u8x16_splat(0x0F);
    for (u, o) in w
        .chunks_exact(layout.unit_bytes())
        .zip(out.chunks_exact_mut(layout.unit_len()))
    {
        let d = f32_at(u, 0);
        // Block `k` of the unit (its 32 integer weights `n` as four i16x8) into `o`.
        let put = |k: usize, n: [v128; 4], o: &mut [f32]| {
            // The scale and offset of each sub-block of 16.
            let scales = match layout {
                Layout::Nibbles | Layout::BytesMin => [(d, Some(f32_at(u, 4))); 2],
                Layout::Bytes => [(d, None); 2],
                Layout::Halves | Layout::TwoBit | Layout::ThreeBit | Layout::FourBit => {
                    [0, 1].map(|h| layout.half_scales(u, k, h))
                }
            };
            for (i, half) in n.into_iter().enumerate() {
                let (d, m) = scales[i / 2];
                let (d, m) = (f32x4_splat(d), m.map(|m| f32x4_splat(m)));
                for (j, quarter) in [i32x4_extend_low_i16x8(half), i32x4_extend_high_i16x8(half)]
                    .into_iter()
                    .enumerate()
                {
                    let scaled = f32x4_mul(f32x4_convert_i32x4(quarter), d);
                    let v = m.map_or(scaled, |m| f32x4_add(scaled, m));
                    store(&mut o[8 * i + 4 * j..8 * i + 4 * j + 4], v);
                }
            }
        };
        let at = layout.qs_at();
        match layout {
            Layout::TwoBit => {
                LowBits::<false>::new(u).each(|k, n| put(k, n, &mut o[QK * k..QK * (k + 1)]))
            }
            Layout::ThreeBit => {
                LowBits::<true>::new(u).each(|k, n| put(k, n, &mut o[QK * k..QK * (k + 1)]))
            }
            Layout::FourBit => Quads::new(u).each(|k, n| put(k, n, &mut o[QK * k..QK * (k + 1)])),
            Layout::Nibbles => {
                let qs = load(u, at);
                put(
                    0,
                    join(widen_u8(v128_and(qs, mask)), widen_u8(u8x16_shr(qs, 4))),
                    o,
                );
            }
            Layout::Halves => {
                for (k, o) in o.chunks_exact_mut(QK).enumerate() {
                    let at = at + QK * k;
                    put(
                        k,
                        join(widen_i8(load(u, at)), widen_i8(load(u, at + 16))),
                        o,
                    );
                }
            }
            Layout::Bytes | Layout::BytesMin => put(
                0,
                join(widen_i8(load(u, at)), widen_i8(load(u, at + 16))),
                o,
            ),
        }
    }
}

/// A super-block's bit fields, loaded once, from which each of its eight blocks' 32 integer weights are
/// taken with constant shifts and masks.
trait Fields {
    /// Block `K`'s weights as four i16x8.
    fn block<const K: usize>(&self) -> [v128; 4];

    /// `f(k, block k)` for the eight blocks in order, each `K` a constant.
    fn each(&self, mut f: impl FnMut(usize, [v128; 4])) {
        f(0, self.block::<0>());
        f(1, self.block::<1>());
        f(2, self.block::<2>());
        f(3, self.block::<3>());
        f(4, self.block::<4>());
        f(5, self.block::<5>());
        f(6, self.block::<6>());
        f(7, self.block::<7>());
    }
}

/// The bit fields of a TwoBit (`THREE` false) or ThreeBit super-block in v128s, loaded once for its
/// eight blocks.
struct LowBits<const THREE: bool> {
    /// `qs` in four v128: bytes `32 (k / 4) + 16 h..` hold half `h` of block `k`.
    qs: [v128; 4],
    /// ThreeBit's `hmask`, the two halves.
    hmask: [v128; 2],
}

impl<const THREE: bool> LowBits<THREE> {
    fn new(u: &[u8]) -> Self {
        let at = if THREE { THREE_BIT_QS } else { TWO_BIT_QS };
        LowBits {
            qs: [0, 1, 2, 3].map(|i| load(u, at + 16 * i)),
            hmask: if THREE {
                [load(u, THREE_BIT_HMASK), load(u, THREE_BIT_HMASK + HALF)]
            } else {
                [i8x16_splat(0); 2]
            },
        }
    }
}

impl<const THREE: bool> Fields for LowBits<THREE> {
    /// The 32 unscaled weights of block `K` as four i16x8, as `Layout::low_bits`: two bits shifted
    /// down, and for ThreeBit 4 taken off where bit `K` of `hmask` is clear. `K` a constant, so that the
    /// shifts and masks are immediates (a variable byte shift is several instructions in V8).
    #[inline(always)]
    fn block<const K: usize>(&self) -> [v128; 4] {
        let halves = [0, 1].map(|h| {
            let q = v128_and(
                u8x16_shr(self.qs[2 * (K / 4) + h], 2 * (K % 4) as u32),
                u8x16_splat(3),
            );
            if THREE {
                let clear = i8x16_eq(v128_and(self.hmask[h], u8x16_splat(1 << K)), i8x16_splat(0));
                i8x16_sub(q, v128_and(clear, i8x16_splat(4)))
            } else {
                q
            }
        });
        join(widen_i8(halves[0]), widen_i8(halves[1]))
    }
}

/// The 4-bit fields of a FourBit super-block in v128s, loaded once for its eight blocks: bytes
/// `32 (k / 2)..` hold block `k`'s weights, in their low nibbles for even `k`, high for odd.
struct Quads {
    qs: [v128; 8],
}

impl Quads {
    fn new(u: &[u8]) -> Self {
        Quads {
            qs: [0, 1, 2, 3, 4, 5, 6, 7].map(|i| load(u, FOUR_BIT_QS + 16 * i)),
        }
    }
}

impl Fields for Quads {
    /// The 32 weights (0..16) of block `K` as four i16x8, as `Layout::low_bits`; `K` a constant, so
    /// that the choice of nibble is made at compile time.
    #[inline(always)]
    fn block<const K: usize>(&self) -> [v128; 4] {
        let halves = [0, 1].map(|h| {
            let q = self.qs[2 * (K / 2) + h];
            if K.is_multiple_of(2) {
                v128_and(q, u8x16_splat(0x0F))
            } else {
                u8x16_shr(q, 4)
            }
        });
        join(widen_u8(halves[0]), widen_u8(halves[1]))
    }
}

/// Stores `v` into the four f32 of `out`.
fn store(out: &mut [f32], v: v128) {
    let out: &mut [f32; 4] = out.try_into().expect("four lanes");
    // SAFETY: `out` is exactly 16 bytes of f32, writable through the exclusive borrow; v128.store has no
    // alignment requirement and every bit pattern is a valid f32.
    unsafe { v128_store(out.as_mut_ptr().cast::<v128>(), v) }
}

pub(crate) fn nibbles<const N: usize>(w: &[u8], xs: [QuantizedRow; N]) -> [f32; N] {
    let mask = u8x16_splat(0x0F);
    blocks::<N, NIBBLES_BYTES>(w, xs, |b| {
        let qs = load(b, 8);
        let n = join(widen_u8(v128_and(qs, mask)), widen_u8(u8x16_shr(qs, 4)));
        (n, f32_at(b, 0), f32_at(b, 4))
    })
}

pub(crate) fn bytes<const N: usize>(w: &[u8], xs: [QuantizedRow; N]) -> [f32; N] {
    blocks::<N, BYTES_BYTES>(w, xs, |b| {
        let n = join(widen_i8(load(b, 4)), widen_i8(load(b, 20)));
        (n, f32_at(b, 0), 0.0)
    })
}

pub(crate) fn bytes_min<const N: usize>(w: &[u8], xs: [QuantizedRow; N]) -> [f32; N] {
    blocks::<N, BYTES_MIN_BYTES>(w, xs, |b| {
        let n = join(widen_i8(load(b, 8)), widen_i8(load(b, 24)));
        (n, f32_at(b, 0), f32_at(b, 4))
    })
}

/// As `dot::halves`: each i16x8 of weights times its half's scale (`i16x8.mul`, exact), once per block.
pub(crate) fn halves<const N: usize>(w: &[u8], xs: [QuantizedRow; N]) -> [f32; N] {
    let (w, _) = w.as_chunks::<HALVES_BYTES>();
    let codes = xs.map(|x| x.codes.as_chunks::<QK>().0);
    let blocks = 8 * w.len();
    assert!(xs.iter().zip(&codes).all(|(x, c)| c.len() >= blocks
        && x.scales.len() >= blocks
        && x.sums.len() >= blocks
        && x.half_sums.len() >= 2 * blocks));
    let mut acc = [Acc::zero(); N];
    for (s, sb) in w.iter().enumerate() {
        let rows: [SuperRow; N] = std::array::from_fn(|t| SuperRow::new(xs[t], codes[t], s));
        let step = HalvesStep {
            sb,
            d: f32_at(sb, 0),
            rows: &rows,
        };
        step.all(&mut acc);
    }
    acc.map(Acc::total)
}

/// A super-block of a kernel: each of its eight blocks added to the `N` rows' accumulators, the block's
/// index a constant (so that its offsets, shifts and masks are too).
trait SuperStep<const N: usize> {
    fn block<const K: usize>(&self, acc: &mut [Acc; N]);

    /// The eight blocks in order.
    fn all(&self, acc: &mut [Acc; N]) {
        self.block::<0>(acc);
        self.block::<1>(acc);
        self.block::<2>(acc);
        self.block::<3>(acc);
        self.block::<4>(acc);
        self.block::<5>(acc);
        self.block::<6>(acc);
        self.block::<7>(acc);
    }
}

/// One super-block of `halves`: its bytes, `d`, and the rows' activations.
struct HalvesStep<'a, const N: usize> {
    sb: &'a [u8; HALVES_BYTES],
    d: f32,
    rows: &'a [SuperRow<'a>; N],
}

impl<const N: usize> SuperStep<N> for HalvesStep<'_, N> {
    /// Block `K`, its weights scaled once for all `N` rows.
    #[inline(always)]
    fn block<const K: usize>(&self, acc: &mut [Acc; N]) {
        let n = scaled_halves(self.sb, HALVES_SCALES + 2 * K, HALVES_QS + QK * K);
        for (a, r) in acc.iter_mut().zip(self.rows) {
            a.add(&n, self.d, 0.0, &r.codes[K], r.scales[K], r.sums[K]);
        }
    }
}

/// The 32 weights at `b[at..]` times their half's scale `b[sc_at + h]`, as `dot::scaled_halves`.
fn scaled_halves(b: &[u8], sc_at: usize, at: usize) -> [v128; 4] {
    let sc = [0, 1].map(|h| i16x8_splat(i16::from(b[sc_at + h] as i8)));
    let [q0, q1, q2, q3] = join(widen_i8(load(b, at)), widen_i8(load(b, at + 16)));
    [
        i16x8_mul(q0, sc[0]),
        i16x8_mul(q1, sc[0]),
        i16x8_mul(q2, sc[1]),
        i16x8_mul(q3, sc[1]),
    ]
}

/// As `dot::two_bit`.
pub(crate) fn two_bit<const N: usize>(w: &[u8], xs: [QuantizedRow; N]) -> [f32; N] {
    super_blocks::<false, N, TWO_BIT_BYTES>(w, xs)
}

/// As `dot::three_bit`.
pub(crate) fn three_bit<const N: usize>(w: &[u8], xs: [QuantizedRow; N]) -> [f32; N] {
    super_blocks::<true, N, THREE_BIT_BYTES>(w, xs)
}

/// As `dot::four_bit`: each block's weights times `d sc[k]`, plus `m mn[k]` times the block's sum, as a
/// Nibbles block.
pub(crate) fn four_bit<const N: usize>(w: &[u8], xs: [QuantizedRow; N]) -> [f32; N] {
    let (w, _) = w.as_chunks::<FOUR_BIT_BYTES>();
    let codes = xs.map(|x| x.codes.as_chunks::<QK>().0);
    let blocks = 8 * w.len();
    assert!(xs
        .iter()
        .zip(&codes)
        .all(|(x, c)| c.len() >= blocks && x.scales.len() >= blocks && x.sums.len() >= blocks));
    let mut acc = [Acc::zero(); N];
    for (s, sb) in w.iter().enumerate() {
        let rows: [SuperRow; N] = std::array::from_fn(|t| SuperRow::new(xs[t], codes[t], s));
        // The eight blocks' `d sc[k]` and `m mn[k]`, four lanes at a time: the f32 products of the
        // portable kernel, with fewer instructions than eight scalar conversions and products each.
        let bytes = load(sb, FOUR_BIT_SCALES);
        let (sc, mn) = (
            u16x8_extend_low_u8x16(bytes),
            u16x8_extend_high_u8x16(bytes),
        );
        let times = |v: v128, by: f32| {
            let by = f32x4_splat(by);
            [
                f32x4_mul(f32x4_convert_i32x4(u32x4_extend_low_u16x8(v)), by),
                f32x4_mul(f32x4_convert_i32x4(u32x4_extend_high_u16x8(v)), by),
            ]
        };
        let step = FourStep {
            quads: Quads::new(sb),
            dl: times(sc, f32_at(sb, 0)),
            ml: times(mn, f32_at(sb, 4)),
            rows: &rows,
        };
        step.all(&mut acc);
    }
    acc.map(Acc::total)
}

/// One super-block of `four_bit`: its nibbles, its blocks' scales and offsets (four in a v128), and the
/// rows' activations.
struct FourStep<'a, const N: usize> {
    quads: Quads,
    dl: [v128; 2],
    ml: [v128; 2],
    rows: &'a [SuperRow<'a>; N],
}

impl<const N: usize> SuperStep<N> for FourStep<'_, N> {
    /// Block `K`, decoded once for all `N` rows; its scale and offset made as the Nibbles conversion made
    /// them.
    #[inline(always)]
    fn block<const K: usize>(&self, acc: &mut [Acc; N]) {
        let n = self.quads.block::<K>();
        let (dl, ml) = (lane::<K>(self.dl), lane::<K>(self.ml));
        for (a, r) in acc.iter_mut().zip(self.rows) {
            a.add(&n, dl, ml, &r.codes[K], r.scales[K], r.sums[K]);
        }
    }
}

/// Lane `K` of eight f32 in two v128.
#[inline(always)]
fn lane<const K: usize>(v: [v128; 2]) -> f32 {
    let v = v[K / 4];
    match K % 4 {
        0 => f32x4_extract_lane::<0>(v),
        1 => f32x4_extract_lane::<1>(v),
        2 => f32x4_extract_lane::<2>(v),
        _ => f32x4_extract_lane::<3>(v),
    }
}

/// A row's activations for one super-block: its eight blocks of codes, their scales, sums and half
/// sums, as arrays (checked once per super-block, so that the blocks' reads need no checks).
struct SuperRow<'a> {
    codes: &'a [[i16; QK]; 8],
    scales: &'a [f32; 8],
    sums: &'a [f32; 8],
    half_sums: &'a [i32; 16],
}

impl<'a> SuperRow<'a> {
    /// Super-block `s` of `x`, which holds at least `s + 1` super-blocks (asserted by the caller).
    fn new(x: QuantizedRow<'a>, codes: &'a [[i16; QK]], s: usize) -> Self {
        let part = "a row holds every super-block of the weight row";
        SuperRow {
            codes: codes[8 * s..8 * s + 8].try_into().expect(part),
            scales: x.scales[8 * s..8 * s + 8].try_into().expect(part),
            sums: x.sums[8 * s..8 * s + 8].try_into().expect(part),
            half_sums: x.half_sums[16 * s..16 * s + 16].try_into().expect(part),
        }
    }
}

/// As `dot::super_blocks`, for TwoBit (`THREE` false) or ThreeBit super-blocks of `B` bytes.
fn super_blocks<const THREE: bool, const N: usize, const B: usize>(
    w: &[u8],
    xs: [QuantizedRow; N],
) -> [f32; N] {
    let (w, _) = w.as_chunks::<B>();
    let codes = xs.map(|x| x.codes.as_chunks::<QK>().0);
    let blocks = 8 * w.len();
    assert!(xs.iter().zip(&codes).all(|(x, c)| c.len() >= blocks
        && x.scales.len() >= blocks
        && x.half_sums.len() >= 2 * blocks));
    let mut acc = [Acc::zero(); N];
    for (s, sb) in w.iter().enumerate() {
        let rows: [SuperRow; N] = std::array::from_fn(|t| SuperRow::new(xs[t], codes[t], s));
        let step = Step {
            sb,
            bits: LowBits::<THREE>::new(sb),
            d: f32_at(sb, 0),
            m: if THREE { 0.0 } else { f32_at(sb, 4) },
            rows: &rows,
        };
        step.all(&mut acc);
    }
    acc.map(Acc::total)
}

/// One super-block of `super_blocks`: its bytes and bit fields, `d`, TwoBit's `m`, and the rows'
/// activations.
struct Step<'a, const THREE: bool, const B: usize, const N: usize> {
    sb: &'a [u8; B],
    bits: LowBits<THREE>,
    d: f32,
    m: f32,
    rows: &'a [SuperRow<'a>; N],
}

impl<const THREE: bool, const B: usize, const N: usize> SuperStep<N> for Step<'_, THREE, B, N> {
    /// Block `K`: its weights times each half's scale (`i16x8.mul`, exact), once for all `N` rows.
    #[inline(always)]
    fn block<const K: usize>(&self, acc: &mut [Acc; N]) {
        let sb = self.sb;
        let [q0, q1, q2, q3] = self.bits.block::<K>();
        let sc = [0, 1].map(|h| {
            i16x8_splat(if THREE {
                i16::from(sb[THREE_BIT_SCALES + 2 * K + h] as i8)
            } else {
                i16::from(sb[TWO_BIT_SCALES + 2 * K + h] & 0x0F)
            })
        });
        let n = [
            i16x8_mul(q0, sc[0]),
            i16x8_mul(q1, sc[0]),
            i16x8_mul(q2, sc[1]),
            i16x8_mul(q3, sc[1]),
        ];
        // TwoBit's 4-bit mins (ThreeBit has none).
        let mins = (!THREE).then(|| [0, 1].map(|h| i32::from(sb[TWO_BIT_SCALES + 2 * K + h] >> 4)));
        for (a, r) in acc.iter_mut().zip(self.rows) {
            a.add_lanes(product(&n, &r.codes[K]), self.d * r.scales[K]);
            if let Some(mn) = mins {
                let t = mn[0] * r.half_sums[2 * K] + mn[1] * r.half_sums[2 * K + 1];
                a.offset += t as f32 * (self.m * r.scales[K]);
            }
        }
    }
}
