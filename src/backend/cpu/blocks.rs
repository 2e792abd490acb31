//! The block layouts the CPU kernels read, made once at load from ggml blocks: f32 scales instead of
//! f16 (wasm has no f16 conversion instruction: converting two per block cost as much as its products),
//! and formats that differ only in their scales in one form, so that one kernel serves them all.
//!
//! - Nibbles (from Q4_0, Q4_1): 32 weights `n d + m`, `n` in 0..16, as `d: f32, m: f32, qs: [u8; 16]`,
//!   element `i` in the low nibble of `qs[i]` and element `16 + i` in its high nibble. Q4_0's `(n - 8) d`
//!   becomes `m = -8 d`.
//! - Bytes (from Q8_0, Q5_0, IQ4_NL, IQ4_XS): 32 weights `q d`, `q` an i8, as `d: f32, qs: [i8; 32]`.
//!   Q5_0's `(q - 16) d` is exact in an i8, and so are the IQ4 types' table values (`IQ4_VALUES`) with
//!   each IQ4_XS sub-block's `d (ls - 32)` as its `d`: 8 bits a weight instead of 5.5 or 4.25, but the
//!   integer kernel instead of an f32 copy (32 bits).
//! - BytesMin (from Q5_1, Q5_K): 32 weights `n d + m`, `n` in 0..32, as `d: f32, m: f32, qs: [i8; 32]`;
//!   Nibbles' form with 5-bit `n` (each Q5_K sub-block as Q4_K's).
//! - Halves (from Q6_K): the file's super-block of 256 weights, 16 sub-blocks of 16 `q d sc[s]`, as
//!   `d: f32, sc: [i8; 16], qs: [i8; 256]` (276 bytes, 1.31x the file's 210: a byte a weight, so that
//!   no bit field is taken apart per token). Block `k` (0..8) is `qs[32 k..][..32]`, its halves scaled
//!   by `sc[2 k]` and `sc[2 k + 1]`. Q6_K's `q` (-32..32) times its i8 scale needs 13 bits, so the
//!   scale stays a separate integer that the kernels multiply in i16 once per block
//!   (`dot::scaled_halves`).
//! - FourBit (from Q4_K): the file's super-block of 256 weights, `d: f32, m: f32, sc: [u8; 8], mn: [u8;
//!   8], qs: [u8; 128]` (1.06x its bytes; each sub-block as a Nibbles block of its own was 1.33x):
//!   Q4_K's f16 `d` and `-dmin` as f32, its packed 6-bit scales and mins as bytes, `qs` as the file has
//!   it. Block `k` (0..8) is the 32 weights `(qs[32 (k / 2) + l] >> 4 (k % 2)) & 15`, `l` in 0..32, times
//!   `d sc[k]`, plus `m mn[k]`: the same products, and the same roundings, as Nibbles blocks.
//! - TwoBit (from Q2_K) and ThreeBit (from Q3_K): the file's super-blocks of 256 weights with their bit
//!   fields as the file has them (1.05x its bytes: a byte a weight was 4.2x and 2.8x, and these types
//!   are taken for the models that would not fit otherwise); only the f16 scales become f32 and Q3_K's
//!   packed 6-bit scales become bytes. Block `k` (0..8) of a super-block is the 32 weights
//!   `(qs[32 (k / 4) + l] >> 2 (k % 4)) & 3`, `l` in 0..32, half `h = l / 16` with scale `2 k + h`:
//!   - TwoBit: `d: f32, m: f32, scales: [u8; 16], qs: [u8; 64]`, w = q d sc + m mn, `sc` and `mn` the
//!     low and high nibbles of `scales[2 k + h]` and `m = -dmin`;
//!   - ThreeBit: `d: f32, sc: [i8; 16], hmask: [u8; 32], qs: [u8; 64]`, w = (q - 4 [bit k of hmask[l]
//!     clear]) d sc, the scales `sc - 32`.

use super::dot::QK;
use crate::weights::quant::{
    f16_at, five_bit, iq4_block, iq4_xs_scales, k_scales, q3_k_scales, q5_k_sub, q6_k, GgmlType,
    K16,
};

pub(crate) const NIBBLES_BYTES: usize = 24;
pub(crate) const BYTES_BYTES: usize = 36;
pub(crate) const BYTES_MIN_BYTES: usize = 40;
pub(crate) const HALVES_BYTES: usize = 276;
pub(crate) const TWO_BIT_BYTES: usize = 88;
pub(crate) const THREE_BIT_BYTES: usize = 116;
pub(crate) const FOUR_BIT_BYTES: usize = 152;
/// Elements per half of a block (a 16-weight K-quant sub-block).
pub(crate) const HALF: usize = QK / 2;
/// Weights per super-block of the Halves, TwoBit, ThreeBit and FourBit layouts (and of every K-quant).
pub(crate) const SUPER: usize = 256;
/// Where the fields of the TwoBit and ThreeBit layouts start.
pub(crate) const TWO_BIT_SCALES: usize = 8;
pub(crate) const TWO_BIT_QS: usize = 24;
pub(crate) const THREE_BIT_SCALES: usize = 4;
pub(crate) const THREE_BIT_HMASK: usize = 20;
pub(crate) const THREE_BIT_QS: usize = 52;
pub(crate) const HALVES_SCALES: usize = 4;
pub(crate) const HALVES_QS: usize = 20;
pub(crate) const FOUR_BIT_SCALES: usize = 8;
pub(crate) const FOUR_BIT_MINS: usize = 16;
pub(crate) const FOUR_BIT_QS: usize = 24;

/// The kernel layout of a block.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Layout {
    Nibbles,
    Bytes,
    BytesMin,
    Halves,
    TwoBit,
    ThreeBit,
    FourBit,
}

impl Layout {
    /// The layout a ggml type converts to, if any.
    pub fn of(ty: GgmlType) -> Option<Layout> {
        match ty {
            GgmlType::Q4_0 | GgmlType::Q4_1 => Some(Layout::Nibbles),
            GgmlType::Q4_K => Some(Layout::FourBit),
            GgmlType::Q8_0 | GgmlType::Q5_0 | GgmlType::IQ4_NL | GgmlType::IQ4_XS => {
                Some(Layout::Bytes)
            }
            GgmlType::Q5_1 | GgmlType::Q5_K => Some(Layout::BytesMin),
            GgmlType::Q6_K => Some(Layout::Halves),
            GgmlType::Q3_K => Some(Layout::ThreeBit),
            GgmlType::Q2_K => Some(Layout::TwoBit),
            _ => None,
        }
    }

    /// Weights per unit of the layout: a block of 32, or a super-block of 256.
    pub fn unit_len(self) -> usize {
        match self {
            Layout::Halves | Layout::TwoBit | Layout::ThreeBit | Layout::FourBit => SUPER,
            _ => QK,
        }
    }

    /// Bytes per unit of the layout.
    pub fn unit_bytes(self) -> usize {
        match self {
            Layout::Nibbles => NIBBLES_BYTES,
            Layout::Bytes => BYTES_BYTES,
            Layout::BytesMin => BYTES_MIN_BYTES,
            Layout::Halves => HALVES_BYTES,
            Layout::TwoBit => TWO_BIT_BYTES,
            Layout::ThreeBit => THREE_BIT_BYTES,
            Layout::FourBit => FOUR_BIT_BYTES,
        }
    }

    /// Bytes of a row of `cols` weights (a multiple of `unit_len`).
    pub fn row_bytes(self, cols: usize) -> usize {
        cols / self.unit_len() * self.unit_bytes()
    }

    /// Where a block's 32 integer weights start (a super-block's: its bit fields, `qs`).
    pub fn qs_at(self) -> usize {
        match self {
            Layout::Nibbles | Layout::BytesMin => 8,
            Layout::Bytes => 4,
            Layout::Halves => HALVES_QS,
            Layout::TwoBit => TWO_BIT_QS,
            Layout::ThreeBit => THREE_BIT_QS,
            Layout::FourBit => FOUR_BIT_QS,
        }
    }

    /// The `unit_len` weights of the unit `b` as f32: an embedding row.
    pub fn dequantize(self, b: &[u8], out: &mut [f32]) {
        let d = f32_at(b, 0);
        match self {
            Layout::Nibbles => {
                let m = f32_at(b, 4);
                let (lo, hi) = out.split_at_mut(QK / 2);
                for ((l, h), &q) in lo.iter_mut().zip(hi).zip(&b[8..24]) {
                    *l = f32::from(q & 0x0F) * d + m;
                    *h = f32::from(q >> 4) * d + m;
                }
            }
            Layout::Bytes => {
                for (o, &q) in out.iter_mut().zip(&b[4..36]) {
                    *o = f32::from(q as i8) * d;
                }
            }
            Layout::BytesMin => {
                let m = f32_at(b, 4);
                for (o, &q) in out.iter_mut().zip(&b[8..40]) {
                    *o = f32::from(q as i8) * d + m;
                }
            }
            Layout::Halves | Layout::TwoBit | Layout::ThreeBit | Layout::FourBit => {
                for (k, block) in out.chunks_exact_mut(QK).enumerate() {
                    let q = self.low_bits(b, k);
                    for (h, (o, q)) in block
                        .chunks_exact_mut(HALF)
                        .zip(q.chunks_exact(HALF))
                        .enumerate()
                    {
                        let (dl, ml) = self.half_scales(b, k, h);
                        for (o, &q) in o.iter_mut().zip(q) {
                            let v = dl * f32::from(q);
                            *o = ml.map_or(v, |ml| v + ml);
                        }
                    }
                }
            }
        }
    }

    /// The scale `d sc` of half `h` of block `k` of a super-block, and its offset `m mn` when the layout
    /// has mins.
    pub fn half_scales(self, b: &[u8], k: usize, h: usize) -> (f32, Option<f32>) {
        let d = f32_at(b, 0);
        let (sc, mn) = self.half_integers(b, k, h);
        let m = matches!(self, Layout::TwoBit | Layout::FourBit).then(|| f32_at(b, 4) * mn as f32);
        (d * f32::from(sc), m)
    }

    /// The integer scale and min of half `h` of block `k` (the min 0 where the layout has none).
    pub fn half_integers(self, b: &[u8], k: usize, h: usize) -> (i16, i32) {
        match self {
            Layout::TwoBit => {
                let v = b[TWO_BIT_SCALES + 2 * k + h];
                (i16::from(v & 0x0F), i32::from(v >> 4))
            }
            Layout::ThreeBit => (i16::from(b[THREE_BIT_SCALES + 2 * k + h] as i8), 0),
            Layout::Halves => (i16::from(b[HALVES_SCALES + 2 * k + h] as i8), 0),
            Layout::FourBit => (
                i16::from(b[FOUR_BIT_SCALES + k]),
                i32::from(b[FOUR_BIT_MINS + k]),
            ),
            _ => (i16::from(b[4 + h] as i8), 0),
        }
    }

    /// The 32 unscaled integer weights of block `k` of a super-block `b`: Q2_K's 0..4, Q3_K's -4..4,
    /// Q4_K's 0..16, Q6_K's -32..32.
    pub fn low_bits(self, b: &[u8], k: usize) -> [i8; QK] {
        if self == Layout::Halves {
            let at = HALVES_QS + QK * k;
            return std::array::from_fn(|l| b[at + l] as i8);
        }
        let (bits, mask) = if self == Layout::FourBit {
            (4, 15)
        } else {
            (2, 3)
        };
        let per_byte = 8 / bits;
        let at = self.qs_at() + QK * (k / per_byte);
        let qs = &b[at..at + QK];
        let shift = bits * (k % per_byte);
        std::array::from_fn(|l| {
            let q = ((qs[l] >> shift) & mask) as i8;
            match self {
                Layout::ThreeBit if (b[THREE_BIT_HMASK + l] >> k) & 1 == 0 => q - 4,
                _ => q,
            }
        })
    }
}

/// Little-endian f32 at `at`; callers pass whole blocks, so `at + 3` is in range.
pub(crate) fn f32_at(block: &[u8], at: usize) -> f32 {
    f32::from_le_bytes([block[at], block[at + 1], block[at + 2], block[at + 3]])
}

/// Appends `data` (whole ggml blocks of `ty`) to `out` in the kernel layout of `ty`
/// ([`Layout::of`]); leaves `out` as it is when no kernel reads `ty`.
pub(crate) fn convert_into(ty: GgmlType, data: &[u8], out: &mut Vec<u8>) {
    let (_, block_bytes) = ty.block_layout();
    for b in data.chunks_exact(block_bytes) {
        match ty {
            GgmlType::Q8_0 => {
                out.extend(f16_at(b, 0).to_le_bytes());
                out.extend_from_slice(&b[2..34]);
            }
            GgmlType::Q4_0 => {
                let d = f16_at(b, 0);
                push_nibbles(out, d, -8.0 * d, &b[2..18]);
            }
            GgmlType::Q4_1 => push_nibbles(out, f16_at(b, 0), f16_at(b, 2), &b[4..20]),
            GgmlType::Q5_0 => {
                let q = five_bit(&b[2..6], &b[6..22]).map(|q| q as i8 - 16);
                push_bytes(out, f16_at(b, 0), &q);
            }
            GgmlType::IQ4_NL => push_bytes(out, f16_at(b, 0), &iq4_block(&b[2..18])),
            GgmlType::IQ4_XS => {
                let d = f16_at(b, 0);
                for (ib, scale) in iq4_xs_scales(b).into_iter().enumerate() {
                    let q = iq4_block(&b[8 + 16 * ib..8 + 16 * ib + 16]);
                    push_bytes(out, d * f32::from(scale), &q);
                }
            }
            GgmlType::Q4_K => {
                let (sc, mn) = k_scales(&b[4..16]);
                out.extend(f16_at(b, 0).to_le_bytes());
                out.extend((-f16_at(b, 2)).to_le_bytes());
                out.extend(sc);
                out.extend(mn);
                out.extend_from_slice(&b[16..144]);
            }
            GgmlType::Q5_1 => {
                let q = five_bit(&b[4..8], &b[8..24]);
                push_bytes_min(out, f16_at(b, 0), f16_at(b, 2), &q);
            }
            GgmlType::Q5_K => {
                let (d, dmin) = (f16_at(b, 0), f16_at(b, 2));
                let (sc, mn) = k_scales(&b[4..16]);
                for sub in 0..8 {
                    let (dl, ml) = (d * f32::from(sc[sub]), dmin * f32::from(mn[sub]));
                    push_bytes_min(out, dl, -ml, &q5_k_sub(b, sub));
                }
            }
            GgmlType::Q6_K => push_halves(out, &q6_k(b)),
            GgmlType::Q3_K => {
                out.extend(f16_at(b, 108).to_le_bytes());
                out.extend(q3_k_scales(&b[96..108]).map(|s| s as u8));
                out.extend_from_slice(&b[0..96]);
            }
            GgmlType::Q2_K => {
                out.extend(f16_at(b, 80).to_le_bytes());
                out.extend((-f16_at(b, 82)).to_le_bytes());
                out.extend_from_slice(&b[0..80]);
            }
            _ => return,
        }
    }
}

fn push_bytes_min(out: &mut Vec<u8>, d: f32, m: f32, q: &[u8; QK]) {
    out.extend(d.to_le_bytes());
    out.extend(m.to_le_bytes());
    out.extend_from_slice(q);
}

/// A 16-weight K-quant super-block as a Halves super-block.
fn push_halves(out: &mut Vec<u8>, k: &K16) {
    out.extend(k.d.to_le_bytes());
    out.extend(k.scales.iter().map(|&v| v as u8));
    out.extend(k.q.iter().map(|&q| q as u8));
}

fn push_bytes(out: &mut Vec<u8>, d: f32, q: &[i8; QK]) {
    out.extend(d.to_le_bytes());
    out.extend(q.iter().map(|&q| q as u8));
}

fn push_nibbles(out: &mut Vec<u8>, d: f32, m: f32, packed: &[u8]) {
    out.extend(d.to_le_bytes());
    out.extend(m.to_le_bytes());
    out.extend_from_slice(packed);
}
