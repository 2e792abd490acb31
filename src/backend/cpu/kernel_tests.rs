//! The dot-product kernels (whichever `kernels` is compiled: portable, or simd128 on wasm) against
//! dequantize-then-f64 references (within the i16 rounding of the activations), on random blocks with
//! edge-case scales.

use half::f16;

use super::activations::{QuantizedRow, QuantizedRows};
use super::blocks::convert;
use super::dot::QK;
use super::kernels;
use super::test_rng::Rng;
use crate::weights::quant::{dequantize, GgmlType};

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

type Kernel<const N: usize> = fn(&[u8], [QuantizedRow; N]) -> [f32; N];

/// A ggml row converted to its kernel layout (`one` and `four` must be that layout's kernel) against the
/// dequantized f64 product, and `four` (the same kernel on four rows at once) against `one`, bit for
/// bit: draft verification relies on a token's logits not depending on its neighbours. Also the
/// layout's own dequantization (embedding rows) against the ggml dequantizer.
fn check(ty: GgmlType, one: Kernel<1>, four: Kernel<4>) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ty.block_layout().1 as u64);
    let (block_len, _) = ty.block_layout();
    for trial in 0..20 {
        let blocks = 1 + trial % 4;
        let n = blocks * block_len;
        let ggml = random_row(&mut rng, ty, blocks);
        let w = dequantize("w", ty, &ggml).unwrap();
        let (layout, row) = convert(ty, &ggml).unwrap();
        let mut embedded = vec![0.0; n];
        for (b, o) in row
            .chunks_exact(layout.block_bytes())
            .zip(embedded.chunks_exact_mut(QK))
        {
            layout.dequantize(b, o);
        }
        for (i, (&a, &b)) in embedded.iter().zip(&w).enumerate() {
            // Q4_0's (n - 8) d is n d - 8 d here: one rounding more.
            assert!(
                (a - b).abs() <= 2.0 * f32::EPSILON * b.abs().max(a.abs()),
                "{ty:?} trial {trial} weight {i}: {a} vs {b}"
            );
        }
        let x = random_x(&mut rng, n);
        let xq = QuantizedRows::new(&x, n);
        let got = f64::from(one(&row, [xq.row(0)])[0]);
        let want = dot64(&w, &x);
        // Rounding an activation to its block's i16 step moves it by at most half a step; the rest is f32
        // summation.
        let rounding: f64 = w
            .chunks_exact(QK)
            .zip(x.chunks_exact(QK))
            .map(|(wb, xb)| {
                let step = f64::from(xb.iter().fold(0.0f32, |m, v| m.max(v.abs()))) / 32767.0;
                wb.iter().map(|&a| f64::from(a.abs())).sum::<f64>() * step / 2.0
            })
            .sum();
        let magnitude: f64 = w
            .iter()
            .zip(&x)
            .map(|(&a, &b)| f64::from((a * b).abs()))
            .sum();
        assert!(
            (got - want).abs() <= rounding * 1.001 + 1e-6 * magnitude + 1e-30,
            "{ty:?} trial {trial}: {got} vs dequantized {want}"
        );
        let others: Vec<QuantizedRows> = (0..3)
            .map(|_| QuantizedRows::new(&random_x(&mut rng, n), n))
            .collect();
        let together = four(
            &row,
            [
                others[0].row(0),
                xq.row(0),
                others[1].row(0),
                others[2].row(0),
            ],
        );
        assert_eq!(
            together[1].to_bits(),
            one(&row, [xq.row(0)])[0].to_bits(),
            "{ty:?} trial {trial}"
        );
        for (k, other) in others.iter().enumerate() {
            let alone = one(&row, [other.row(0)])[0];
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
    check(GgmlType::Q8_0, kernels::bytes::<1>, kernels::bytes::<4>);
}

#[test]
fn q4_0_matches_dequantized() {
    check(GgmlType::Q4_0, kernels::nibbles::<1>, kernels::nibbles::<4>);
}

#[test]
fn q4_1_matches_dequantized() {
    check(GgmlType::Q4_1, kernels::nibbles::<1>, kernels::nibbles::<4>);
}

#[test]
fn q4_k_matches_dequantized() {
    check(GgmlType::Q4_K, kernels::nibbles::<1>, kernels::nibbles::<4>);
}

#[test]
fn dense_matches_f64_with_a_tail_and_alone_equals_grouped() {
    let mut rng = Rng(7);
    for n in [1, 7, 8, 16, 33, 576] {
        let a = rng.values(n);
        let b = rng.values(n);
        let got = kernels::dense(&a, [&b])[0];
        assert!(
            (f64::from(got) - dot64(&a, &b)).abs() <= 1e-5 * n as f64,
            "n = {n}"
        );
        let others: Vec<Vec<f32>> = (0..3).map(|_| rng.values(n)).collect();
        let together = kernels::dense(&a, [&others[0], &others[1], &b, &others[2]]);
        assert_eq!(together[2].to_bits(), got.to_bits(), "n = {n}");
        for (k, other) in others.iter().enumerate() {
            let alone = kernels::dense(&a, [other])[0];
            assert_eq!(together[[0, 1, 3][k]].to_bits(), alone.to_bits(), "n = {n}");
        }
    }
}
