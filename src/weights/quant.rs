//! ggml tensor types and their dequantization to f32.
//!
//! Block layouts follow ggml (`ggml-common.h`); the arithmetic follows the Python `gguf` package's
//! `gguf/quants.py` operation by operation (f32 products, no fused multiply-add) so the results match it
//! bit for bit.

use crate::{Result, WispError};
use half::{bf16, f16};

/// Elements per super-block of the K-quants.
const QK_K: usize = 256;

/// Every tensor type ggml defines, with its ggml id. Knowing the layout of all of them lets the GGUF
/// reader bounds-check every tensor, even those we cannot dequantize.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types)]
pub enum GgmlType {
    F32,
    F16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q8_1,
    Q2_K,
    Q3_K,
    Q4_K,
    Q5_K,
    Q6_K,
    Q8_K,
    IQ2_XXS,
    IQ2_XS,
    IQ3_XXS,
    IQ1_S,
    IQ4_NL,
    IQ3_S,
    IQ2_S,
    IQ4_XS,
    I8,
    I16,
    I32,
    I64,
    F64,
    IQ1_M,
    BF16,
    TQ1_0,
    TQ2_0,
    MXFP4,
}

impl GgmlType {
    /// The type with ggml id `id`, or `None` for ids ggml never assigned or retired.
    pub fn from_id(id: u32) -> Option<Self> {
        use GgmlType::*;
        Some(match id {
            0 => F32,
            1 => F16,
            2 => Q4_0,
            3 => Q4_1,
            6 => Q5_0,
            7 => Q5_1,
            8 => Q8_0,
            9 => Q8_1,
            10 => Q2_K,
            11 => Q3_K,
            12 => Q4_K,
            13 => Q5_K,
            14 => Q6_K,
            15 => Q8_K,
            16 => IQ2_XXS,
            17 => IQ2_XS,
            18 => IQ3_XXS,
            19 => IQ1_S,
            20 => IQ4_NL,
            21 => IQ3_S,
            22 => IQ2_S,
            23 => IQ4_XS,
            24 => I8,
            25 => I16,
            26 => I32,
            27 => I64,
            28 => F64,
            29 => IQ1_M,
            30 => BF16,
            34 => TQ1_0,
            35 => TQ2_0,
            39 => MXFP4,
            _ => return None,
        })
    }

    /// `(elements per block, bytes per block)`, as in ggml's type traits.
    pub fn block_layout(self) -> (usize, usize) {
        use GgmlType::*;
        match self {
            F32 | I32 => (1, 4),
            F16 | BF16 | I16 => (1, 2),
            I8 => (1, 1),
            I64 | F64 => (1, 8),
            Q4_0 | IQ4_NL => (32, 2 + 16),
            Q4_1 => (32, 2 + 2 + 16),
            Q5_0 => (32, 2 + 4 + 16),
            Q5_1 => (32, 2 + 2 + 4 + 16),
            Q8_0 => (32, 2 + 32),
            Q8_1 => (32, 4 + 4 + 32),
            MXFP4 => (32, 1 + 16),
            Q2_K => (QK_K, 2 + 2 + QK_K / 16 + QK_K / 4),
            Q3_K => (QK_K, 2 + QK_K / 4 + QK_K / 8 + 12),
            Q4_K => (QK_K, 2 + 2 + QK_K / 2 + 12),
            Q5_K => (QK_K, 2 + 2 + QK_K / 2 + QK_K / 8 + 12),
            Q6_K => (QK_K, 2 + QK_K / 2 + QK_K / 4 + QK_K / 16),
            Q8_K => (QK_K, 4 + QK_K + QK_K / 8),
            IQ2_XXS => (QK_K, 2 + QK_K / 4),
            IQ2_XS => (QK_K, 2 + QK_K / 4 + QK_K / 32),
            IQ3_XXS => (QK_K, 2 + QK_K / 4 + QK_K / 8),
            IQ1_S => (QK_K, 2 + QK_K / 8 + QK_K / 16),
            IQ3_S => (QK_K, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4),
            IQ2_S => (QK_K, 2 + QK_K / 4 + QK_K / 16),
            IQ4_XS => (QK_K, 2 + 2 + QK_K / 2 + QK_K / 64),
            IQ1_M => (QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32),
            TQ1_0 => (QK_K, 2 + 4 * 13),
            TQ2_0 => (QK_K, 2 + 64),
        }
    }
}

/// Decodes `data`, a whole number of `ty` blocks, to f32. `tensor` only names the tensor in errors.
pub fn dequantize(tensor: &str, ty: GgmlType, data: &[u8]) -> Result<Vec<f32>> {
    let decode: fn(&[u8], &mut Vec<f32>) = match ty {
        GgmlType::F32 => |b, out| out.push(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        GgmlType::F16 => |b, out| out.push(f16_at(b, 0)),
        GgmlType::BF16 => |b, out| out.push(bf16::from_le_bytes([b[0], b[1]]).to_f32()),
        GgmlType::Q8_0 => q8_0,
        GgmlType::Q4_0 => q4_0,
        GgmlType::Q4_1 => q4_1,
        GgmlType::Q5_0 => q5_0,
        GgmlType::Q5_1 => q5_1,
        GgmlType::Q4_K => q4_k,
        GgmlType::Q5_K => q5_k,
        GgmlType::Q2_K => |b, out| k16_dequantize(&q2_k(b), out),
        GgmlType::Q3_K => |b, out| k16_dequantize(&q3_k(b), out),
        GgmlType::Q6_K => |b, out| k16_dequantize(&q6_k(b), out),
        GgmlType::IQ4_NL => iq4_nl,
        GgmlType::IQ4_XS => iq4_xs,
        _ => {
            return Err(WispError::UnsupportedWeights(format!(
                "tensor '{tensor}' has ggml type {ty:?}, which this reader cannot dequantize \
                 (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, \
                 Q6_K, IQ4_NL, IQ4_XS)"
            )))
        }
    };
    let (block_len, block_bytes) = ty.block_layout();
    if !data.len().is_multiple_of(block_bytes) {
        return Err(WispError::InvalidWeights(format!(
            "tensor '{tensor}' has {} bytes, not a whole number of {ty:?} blocks of {block_bytes} bytes",
            data.len()
        )));
    }
    let mut out = Vec::with_capacity(data.len() / block_bytes * block_len);
    for block in data.chunks_exact(block_bytes) {
        decode(block, &mut out);
    }
    Ok(out)
}

/// Little-endian f16 at `at`. Callers pass blocks of the exact layout size, so `at + 1` is in range.
pub(crate) fn f16_at(block: &[u8], at: usize) -> f32 {
    f16::from_le_bytes([block[at], block[at + 1]]).to_f32()
}

/// `d: f16, qs: [i8; 32]`; x = q * d.
fn q8_0(b: &[u8], out: &mut Vec<f32>) {
    let d = f16_at(b, 0);
    out.extend(b[2..34].iter().map(|&q| f32::from(q as i8) * d));
}

/// `d: f16, qs: [u8; 16]` of nibbles, low nibbles first; x = (q - 8) * d.
fn q4_0(b: &[u8], out: &mut Vec<f32>) {
    let d = f16_at(b, 0);
    let qs = &b[2..18];
    out.extend(qs.iter().map(|&q| f32::from((q & 0x0F) as i8 - 8) * d));
    out.extend(qs.iter().map(|&q| f32::from((q >> 4) as i8 - 8) * d));
}

/// `d: f16, m: f16, qs: [u8; 16]`; x = q * d + m.
fn q4_1(b: &[u8], out: &mut Vec<f32>) {
    let (d, m) = (f16_at(b, 0), f16_at(b, 2));
    let qs = &b[4..20];
    out.extend(qs.iter().map(|&q| d * f32::from(q & 0x0F) + m));
    out.extend(qs.iter().map(|&q| d * f32::from(q >> 4) + m));
}

/// The 16 values a 4-bit index of IQ4_NL and IQ4_XS stands for (ggml's `kvalues_iq4nl`).
pub(crate) const IQ4_VALUES: [i8; 16] = [
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
];

/// The 32 values of a block of 16 bytes of IQ4 indices (low nibbles first), as their table entries.
pub(crate) fn iq4_block(qs: &[u8]) -> [i8; 32] {
    let mut q = [0i8; 32];
    for (j, &byte) in qs.iter().enumerate() {
        q[j] = IQ4_VALUES[usize::from(byte & 0x0F)];
        q[j + 16] = IQ4_VALUES[usize::from(byte >> 4)];
    }
    q
}

/// `d: f16, qs: [u8; 16]` of indices into [`IQ4_VALUES`]; x = d * value.
fn iq4_nl(b: &[u8], out: &mut Vec<f32>) {
    let d = f16_at(b, 0);
    out.extend(iq4_block(&b[2..18]).iter().map(|&q| d * f32::from(q)));
}

/// The eight sub-block scales of an IQ4_XS super-block, `ls - 32` with `ls` six bits: the low four in
/// `scales_l` (two a byte), the high two in `scales_h` (two bits each).
pub(crate) fn iq4_xs_scales(b: &[u8]) -> [i8; 8] {
    let high = u16::from_le_bytes([b[2], b[3]]);
    std::array::from_fn(|ib| {
        let low = (b[4 + ib / 2] >> (4 * (ib % 2))) & 0x0F;
        let ls = low | ((((high >> (2 * ib)) & 3) as u8) << 4);
        ls as i8 - 32
    })
}

/// `d: f16, scales_h: u16, scales_l: [u8; 4], qs: [u8; 128]`: eight sub-blocks of 32, each
/// x = (d * scale) * value.
fn iq4_xs(b: &[u8], out: &mut Vec<f32>) {
    let d = f16_at(b, 0);
    for (ib, scale) in iq4_xs_scales(b).into_iter().enumerate() {
        let dl = d * f32::from(scale);
        let qs = &b[8 + 16 * ib..8 + 16 * ib + 16];
        out.extend(iq4_block(qs).iter().map(|&q| dl * f32::from(q)));
    }
}

/// The 5-bit values of a Q5_0/Q5_1 block: low nibbles from `qs`, bit 4 of element `i` is bit `i` of `qh`.
pub(crate) fn five_bit(qh: &[u8], qs: &[u8]) -> [u8; 32] {
    let qh = u32::from_le_bytes([qh[0], qh[1], qh[2], qh[3]]);
    let mut q = [0u8; 32];
    for (j, &byte) in qs.iter().enumerate() {
        q[j] = (byte & 0x0F) | ((((qh >> j) & 1) as u8) << 4);
        q[j + 16] = (byte >> 4) | ((((qh >> (j + 16)) & 1) as u8) << 4);
    }
    q
}

/// `d: f16, qh: u32, qs: [u8; 16]`; x = (q - 16) * d.
fn q5_0(b: &[u8], out: &mut Vec<f32>) {
    let d = f16_at(b, 0);
    let q = five_bit(&b[2..6], &b[6..22]);
    out.extend(q.iter().map(|&q| d * f32::from(q as i8 - 16)));
}

/// `d: f16, m: f16, qh: u32, qs: [u8; 16]`; x = q * d + m.
fn q5_1(b: &[u8], out: &mut Vec<f32>) {
    let (d, m) = (f16_at(b, 0), f16_at(b, 2));
    let q = five_bit(&b[4..8], &b[8..24]);
    out.extend(q.iter().map(|&q| d * f32::from(q) + m));
}

/// Unpacks the 8 six-bit (scale, min) pairs of a Q4_K/Q5_K super-block from its 12 scale bytes.
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

/// `d: f16, dmin: f16, scales: [u8; 12], qs: [u8; 128]`: 8 sub-blocks of 32; sub-blocks 2c and 2c+1 are
/// the low and high nibbles of `qs[32c..32c + 32]`; x = (d * sc) * q - dmin * m.
fn q4_k(b: &[u8], out: &mut Vec<f32>) {
    let (d, dmin) = (f16_at(b, 0), f16_at(b, 2));
    let (sc, mn) = k_scales(&b[4..16]);
    let qs = &b[16..144];
    for sub in 0..8 {
        let (dl, ml) = (d * f32::from(sc[sub]), dmin * f32::from(mn[sub]));
        let bytes = &qs[32 * (sub / 2)..32 * (sub / 2) + 32];
        let shift = 4 * (sub % 2);
        out.extend(
            bytes
                .iter()
                .map(|&q| dl * f32::from((q >> shift) & 0x0F) - ml),
        );
    }
}

/// The 5-bit values of Q5_K sub-block `sub` (0..8): its nibbles as in Q4_K, bit 4 of element `l` in
/// bit `sub` of `qh[l]`.
pub(crate) fn q5_k_sub(b: &[u8], sub: usize) -> [u8; 32] {
    let (qh, qs) = (
        &b[16..48],
        &b[48 + 32 * (sub / 2)..48 + 32 * (sub / 2) + 32],
    );
    let shift = 4 * (sub % 2);
    std::array::from_fn(|l| ((qs[l] >> shift) & 0x0F) | (((qh[l] >> sub) & 1) << 4))
}

/// Q4_K plus `qh: [u8; 32]` (after the scales): bit `sub` of `qh[l]` is bit 4 of element `l` of sub-block
/// `sub`.
fn q5_k(b: &[u8], out: &mut Vec<f32>) {
    let (d, dmin) = (f16_at(b, 0), f16_at(b, 2));
    let (sc, mn) = k_scales(&b[4..16]);
    for sub in 0..8 {
        let (dl, ml) = (d * f32::from(sc[sub]), dmin * f32::from(mn[sub]));
        out.extend(q5_k_sub(b, sub).iter().map(|&q| dl * f32::from(q) - ml));
    }
}

/// A super-block of the K-quants with 16-weight sub-blocks (Q2_K, Q3_K, Q6_K) as integers: weight `i` is
/// `(d * scales[i / 16]) * q[i] - dmin * mins[i / 16]` (`dmin` and `mins` zero for Q3_K and Q6_K).
pub(crate) struct K16 {
    pub d: f32,
    pub dmin: f32,
    pub scales: [i8; 16],
    pub mins: [i8; 16],
    pub q: [i8; QK_K],
}

/// Weights `i = 128h + 32k + l` of Q2_K and Q3_K: bits `2k..2k+2` of `qs[32h + l]`.
fn two_bit(qs: &[u8], i: usize) -> i8 {
    let (h, k, l) = (i / 128, (i % 128) / 32, i % 32);
    ((qs[32 * h + l] >> (2 * k)) & 3) as i8
}

/// `scales: [u8; 16], qs: [u8; 64], d: f16, dmin: f16`; each scale byte is a 4-bit scale (low) and a
/// 4-bit min (high).
fn q2_k(b: &[u8]) -> K16 {
    K16 {
        d: f16_at(b, 80),
        dmin: f16_at(b, 82),
        scales: std::array::from_fn(|s| (b[s] & 0x0F) as i8),
        mins: std::array::from_fn(|s| (b[s] >> 4) as i8),
        q: std::array::from_fn(|i| two_bit(&b[16..80], i)),
    }
}

/// `hmask: [u8; 32], qs: [u8; 64], scales: [u8; 12], d: f16`: weight `i` is its two bits in `qs` minus 4
/// unless bit `i / 32` of `hmask[i % 32]` is set; scale `s` is six bits, the low four a nibble of
/// `scales[s % 8]` (high nibble from 8 on), the high two bits `2(s / 4)..` of `scales[8 + s % 4]`, minus 32.
fn q3_k(b: &[u8]) -> K16 {
    K16 {
        d: f16_at(b, 108),
        dmin: 0.0,
        scales: q3_k_scales(&b[96..108]),
        mins: [0; 16],
        q: std::array::from_fn(|i| {
            let high = (b[i % 32] >> (i / 32)) & 1;
            two_bit(&b[32..96], i) - if high == 1 { 0 } else { 4 }
        }),
    }
}

/// Q3_K's sixteen scales from their 12 packed bytes (see [`q3_k`]).
pub(crate) fn q3_k_scales(s: &[u8]) -> [i8; 16] {
    std::array::from_fn(|k| {
        let low = (s[k % 8] >> (4 * (k / 8))) & 0x0F;
        let high = (s[8 + k % 4] >> (2 * (k / 4))) & 3;
        (low | (high << 4)) as i8 - 32
    })
}

/// `ql: [u8; 128], qh: [u8; 64], scales: [i8; 16], d: f16`; element `i = 128h + 32k + l` takes nibble
/// `k / 2` of `ql[64h + 32(k % 2) + l]` and bits `2k..2k+2` of `qh[32h + l]`, minus 32.
pub(crate) fn q6_k(b: &[u8]) -> K16 {
    let (ql, qh) = (&b[0..128], &b[128..192]);
    K16 {
        d: f16_at(b, 208),
        dmin: 0.0,
        scales: std::array::from_fn(|s| b[192 + s] as i8),
        mins: [0; 16],
        q: std::array::from_fn(|i| {
            let (h, k, l) = (i / 128, (i % 128) / 32, i % 32);
            let low = (ql[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0x0F;
            let high = (qh[32 * h + l] >> (2 * k)) & 0x03;
            (low | (high << 4)) as i8 - 32
        }),
    }
}

/// x = (d * scale) * q - dmin * min, per sub-block of 16 (gguf-py's order; `- 0.0` changes no value).
fn k16_dequantize(k: &K16, out: &mut Vec<f32>) {
    for (s, q) in k.q.chunks_exact(16).enumerate() {
        let dl = k.d * f32::from(k.scales[s]);
        let ml = k.dmin * f32::from(k.mins[s]);
        out.extend(q.iter().map(|&q| dl * f32::from(q) - ml));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_id_has_a_layout() {
        for id in 0..64 {
            if let Some(ty) = GgmlType::from_id(id) {
                let (n, bytes) = ty.block_layout();
                assert!(n > 0 && bytes > 0, "{ty:?}");
            }
        }
        assert_eq!(GgmlType::from_id(4), None, "Q4_2 was retired");
        assert_eq!(GgmlType::Q6_K.block_layout(), (256, 210));
        assert_eq!(GgmlType::Q4_K.block_layout(), (256, 144));
    }

    #[test]
    fn unsupported_type_names_tensor_and_type() {
        let err = dequantize("blk.0.ffn_up.weight", GgmlType::IQ2_XXS, &[0; 66]).unwrap_err();
        assert_eq!(err.code(), "UNSUPPORTED_WEIGHTS");
        let msg = err.to_string();
        assert!(
            msg.contains("blk.0.ffn_up.weight") && msg.contains("IQ2_XXS"),
            "{msg}"
        );
    }

    #[test]
    fn partial_block_is_invalid() {
        let err = dequantize("w", GgmlType::Q8_0, &[0; 35]).unwrap_err();
        assert_eq!(err.code(), "INVALID_WEIGHTS");
    }

    #[test]
    fn q8_0_by_hand() {
        let mut block = vec![0u8; 34];
        block[..2].copy_from_slice(&f16::from_f32(0.5).to_le_bytes());
        block[2] = 4;
        block[3] = (-6i8) as u8;
        let x = dequantize("w", GgmlType::Q8_0, &block).unwrap();
        assert_eq!(&x[..3], &[2.0, -3.0, 0.0]);
    }
}
