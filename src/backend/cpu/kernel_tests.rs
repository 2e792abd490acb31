//! The dot-product kernels (whichever `kernels` is compiled: portable, or simd128 on wasm) against
//! dequantize-then-f32 references, on random blocks with edge-case scales.

use half::f16;

use super::dot::QK;
use super::kernels;
use crate::weights::quant::{dequantize, GgmlType};

/// xorshift64: deterministic, dependency-free test data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn byte(&mut self) -> u8 {
        (self.next() >> 24) as u8
    }

    /// Uniform in [-1, 1).
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

/// f16 scales worth covering: zero, negative, subnormal, the largest finite, and ordinary ones.
const EDGE_SCALES: [f32; 6] = [0.0, -0.03, 6.0e-8, 65504.0, 1.0, 0.002];

fn scale(rng: &mut Rng, i: usize) -> [u8; 2] {
    let v = if i.is_multiple_of(3) {
        EDGE_SCALES[(i / 3) % EDGE_SCALES.len()]
    } else {
        rng.unit() * 0.1
    };
    f16::from_f32(v).to_le_bytes()
}

/// A row of `blocks` random blocks of `ty`, with f16 scales (and mins) at the start of each block.
fn random_row(rng: &mut Rng, ty: GgmlType, blocks: usize) -> Vec<u8> {
    let (_, bytes) = ty.block_layout();
    let scale_fields = match ty {
        GgmlType::Q8_0 | GgmlType::Q4_0 => 1,
        _ => 2,
    };
    let mut row = Vec::with_capacity(blocks * bytes);
    for b in 0..blocks {
        for f in 0..scale_fields {
            row.extend(scale(rng, b * scale_fields + f));
        }
        row.extend((2 * scale_fields..bytes).map(|_| rng.byte()));
    }
    row
}

/// Activations with an all-zero block, a block with one huge value, and ordinary ones.
fn random_x(rng: &mut Rng, n: usize) -> Vec<f32> {
    let mut x: Vec<f32> = (0..n).map(|_| rng.unit() * 3.0).collect();
    x[..QK].fill(0.0);
    if n >= 2 * QK {
        x[QK + 5] = 1.0e4;
    }
    x
}

fn dot64(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| f64::from(x) * f64::from(y))
        .sum()
}

/// `one` against the dequantized f64 product, and `four` (the same kernel on four rows at once) against
/// `one`, bit for bit: draft verification relies on a token's logits not depending on its neighbours.
fn check(
    ty: GgmlType,
    one: fn(&[u8], [&[f32]; 1]) -> [f32; 1],
    four: fn(&[u8], [&[f32]; 4]) -> [f32; 4],
) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ty.block_layout().1 as u64);
    let (block_len, _) = ty.block_layout();
    for trial in 0..20 {
        let blocks = 1 + trial % 4;
        let n = blocks * block_len;
        let row = random_row(&mut rng, ty, blocks);
        let w = dequantize("w", ty, &row).unwrap();
        let x = random_x(&mut rng, n);
        let got = f64::from(one(&row, [&x])[0]);
        // Blocks are decoded with the dequantizer's arithmetic, so only the f32 summation order differs.
        let want = dot64(&w, &x);
        let magnitude: f64 = w
            .iter()
            .zip(&x)
            .map(|(&a, &b)| f64::from((a * b).abs()))
            .sum();
        assert!(
            (got - want).abs() <= 1e-6 * magnitude + 1e-30,
            "{ty:?} trial {trial}: {got} vs dequantized {want}"
        );
        let others: Vec<Vec<f32>> = (0..3).map(|_| random_x(&mut rng, n)).collect();
        let together = four(&row, [&others[0], &x, &others[1], &others[2]]);
        assert_eq!(
            together[1].to_bits(),
            one(&row, [&x])[0].to_bits(),
            "{ty:?} trial {trial}"
        );
        for (k, other) in others.iter().enumerate() {
            let alone = one(&row, [other])[0];
            assert_eq!(
                together[[0, 2, 3][k]].to_bits(),
                alone.to_bits(),
                "{ty:?} trial {trial}"
            );
        }
    }
}

#[test]
fn q8_0_matches_dequantized() {
    check(GgmlType::Q8_0, kernels::q8_0::<1>, kernels::q8_0::<4>);
}

#[test]
fn q4_0_matches_dequantized() {
    check(GgmlType::Q4_0, kernels::q4_0::<1>, kernels::q4_0::<4>);
}

#[test]
fn q4_1_matches_dequantized() {
    check(GgmlType::Q4_1, kernels::q4_1::<1>, kernels::q4_1::<4>);
}

#[test]
fn q4_k_matches_dequantized() {
    check(GgmlType::Q4_K, kernels::q4_k::<1>, kernels::q4_k::<4>);
}

#[test]
fn dense_matches_f64_with_a_tail() {
    let mut rng = Rng(7);
    for n in [1, 7, 8, 16, 33, 576] {
        let a: Vec<f32> = (0..n).map(|_| rng.unit()).collect();
        let b: Vec<f32> = (0..n).map(|_| rng.unit()).collect();
        let got = f64::from(kernels::dense(&a, &b));
        assert!((got - dot64(&a, &b)).abs() <= 1e-5 * n as f64, "n = {n}");
    }
}
