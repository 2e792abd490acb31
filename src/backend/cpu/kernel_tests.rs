//! The dot-product kernels (whichever `kernels` is compiled: portable, or simd128 / relaxed SIMD on wasm) against
//! dequantize-then-f64 references (within the i16 rounding of the activations), on random blocks with
//! edge-case scales.

use half::f16;
// On wasm32 these run under wasm-bindgen-test (in Node, tools/wasm-kernel-tests.sh): the kernels that ship.
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

use super::activations::{QuantizedRow, QuantizedRows};
use super::blocks::{convert_into, Layout};
use super::dot::QK;
use super::kernels;
use super::test_rng::Rng;
use crate::weights::quant::{dequantize, GgmlType};

/// `ggml` (whole blocks of `ty`, a type a kernel reads) in its kernel layout.
fn converted(ty: GgmlType, ggml: &[u8]) -> (Layout, Vec<u8>) {
    let mut row = Vec::new();
    convert_into(ty, ggml, &mut row);
    (Layout::of(ty).expect("a kernel reads the type"), row)
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

/// A row of `blocks` random blocks of `ty`, with f16 scales (and mins) where the type keeps them.
fn random_row(rng: &mut Rng, ty: GgmlType, blocks: usize) -> Vec<u8> {
    let (_, bytes) = ty.block_layout();
    let scale_fields: &[usize] = match ty {
        GgmlType::Q8_0 | GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::IQ4_NL | GgmlType::IQ4_XS => {
            &[0]
        }
        GgmlType::Q6_K => &[208],
        GgmlType::Q3_K => &[108],
        GgmlType::Q2_K => &[80, 82],
        _ => &[0, 2],
    };
    let mut row: Vec<u8> = (0..blocks * bytes).map(|_| rng.byte()).collect();
    for (b, block) in row.chunks_exact_mut(bytes).enumerate() {
        for (f, &at) in scale_fields.iter().enumerate() {
            block[at..at + 2].copy_from_slice(&scale(rng, b * scale_fields.len() + f));
        }
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
        let (layout, row) = converted(ty, &ggml);
        let mut embedded = vec![0.0; n];
        for (b, o) in row
            .chunks_exact(layout.unit_bytes())
            .zip(embedded.chunks_exact_mut(layout.unit_len()))
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
    check(
        GgmlType::Q4_K,
        kernels::four_bit::<1>,
        kernels::four_bit::<4>,
    );
}

#[test]
fn q5_0_matches_dequantized() {
    check(GgmlType::Q5_0, kernels::bytes::<1>, kernels::bytes::<4>);
}

#[test]
fn q5_1_matches_dequantized() {
    check(
        GgmlType::Q5_1,
        kernels::bytes_min::<1>,
        kernels::bytes_min::<4>,
    );
}

#[test]
fn q5_k_matches_dequantized() {
    check(
        GgmlType::Q5_K,
        kernels::bytes_min::<1>,
        kernels::bytes_min::<4>,
    );
}

#[test]
fn q6_k_matches_dequantized() {
    check(GgmlType::Q6_K, kernels::halves::<1>, kernels::halves::<4>);
}

#[test]
fn q3_k_matches_dequantized() {
    check(
        GgmlType::Q3_K,
        kernels::three_bit::<1>,
        kernels::three_bit::<4>,
    );
}

#[test]
fn q2_k_matches_dequantized() {
    check(GgmlType::Q2_K, kernels::two_bit::<1>, kernels::two_bit::<4>);
}

#[test]
fn iq4_nl_matches_dequantized() {
    check(GgmlType::IQ4_NL, kernels::bytes::<1>, kernels::bytes::<4>);
}

#[test]
fn iq4_xs_matches_dequantized() {
    check(GgmlType::IQ4_XS, kernels::bytes::<1>, kernels::bytes::<4>);
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

/// `N` of the four rows `v`, from row `k` on, wrapping around.
fn pick<const N: usize>(v: &[Vec<f32>], k: usize) -> [&[f32]; N] {
    std::array::from_fn(|i| v[(i + k) % 4].as_slice())
}

#[test]
fn tiles_match_f64_with_a_tail_and_do_not_depend_on_the_tile() {
    let mut rng = Rng(7);
    for n in [1, 7, 8, 16, 33, 576] {
        let ws: Vec<Vec<f32>> = (0..4).map(|_| rng.values(n)).collect();
        let xs: Vec<Vec<f32>> = (0..4).map(|_| rng.values(n)).collect();
        let alone = |r: usize, t: usize| kernels::tile::<1, 1>([&ws[r]], [&xs[t]])[0][0];
        for (r, w) in ws.iter().enumerate() {
            for (t, x) in xs.iter().enumerate() {
                let got = f64::from(alone(r, t));
                assert!((got - dot64(w, x)).abs() <= 1e-5 * n as f64, "n = {n}");
            }
        }
        let two_by_four: [[f32; 4]; 2] = kernels::tile(pick(&ws, 1), pick(&xs, 3));
        let four_by_one: [[f32; 1]; 4] = kernels::tile(pick(&ws, 2), pick(&xs, 1));
        let two_by_three: [[f32; 3]; 2] = kernels::tile(pick(&ws, 0), pick(&xs, 2));
        for r in 0..4 {
            for t in 0..4 {
                let want = alone(r, t).to_bits();
                if (1..3).contains(&r) {
                    assert_eq!(two_by_four[r - 1][(t + 1) % 4].to_bits(), want, "n = {n}");
                }
                if t == 1 {
                    assert_eq!(four_by_one[(r + 2) % 4][0].to_bits(), want, "n = {n}");
                }
                if r < 2 && t >= 2 {
                    assert_eq!(two_by_three[r][t - 2].to_bits(), want, "n = {n}");
                }
            }
        }
    }
}

#[test]
fn rows_dequantize_as_their_blocks_do() {
    let mut rng = Rng(11);
    for ty in [
        GgmlType::Q8_0,
        GgmlType::Q4_0,
        GgmlType::Q4_1,
        GgmlType::Q4_K,
        GgmlType::Q5_0,
        GgmlType::IQ4_NL,
        GgmlType::IQ4_XS,
        GgmlType::Q5_1,
        GgmlType::Q5_K,
        GgmlType::Q6_K,
        GgmlType::Q3_K,
        GgmlType::Q2_K,
    ] {
        let blocks = 256 / ty.block_layout().0;
        let ggml = random_row(&mut rng, ty, blocks);
        let (layout, row) = converted(ty, &ggml);
        let mut want = vec![0.0; 256];
        for (b, o) in row
            .chunks_exact(layout.unit_bytes())
            .zip(want.chunks_exact_mut(layout.unit_len()))
        {
            layout.dequantize(b, o);
        }
        let mut got = vec![f32::NAN; 256];
        kernels::dequantize_row(layout, &row, &mut got);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want), "{ty:?}");
    }
}

#[test]
fn weighted_sums_match_f64_and_do_not_depend_on_their_neighbours_or_zero_weights() {
    let mut rng = Rng(13);
    let (len, stride) = (37, 200);
    let base = rng.values(len * stride);
    for width in [4, 7, 64, 80] {
        let ps: Vec<Vec<f32>> = (0..3).map(|_| rng.values(len)).collect();
        let alone = |p: &[f32]| {
            let mut out = vec![0.0; width];
            kernels::weighted_sum::<1, 4>([p], &base, stride, [&mut out]);
            out
        };
        for p in &ps {
            let got = alone(p);
            for (d, &g) in got.iter().enumerate() {
                let want: f64 = (0..len)
                    .map(|s| f64::from(p[s]) * f64::from(base[s * stride + d]))
                    .sum();
                assert!(
                    (f64::from(g) - want).abs() <= 1e-5 * len as f64,
                    "width {width}"
                );
            }
        }
        let (mut a, mut b, mut c) = (vec![0.0; width], vec![0.0; width], vec![0.0; width]);
        kernels::weighted_sum::<3, 2>(
            [&ps[0], &ps[1], &ps[2]],
            &base,
            stride,
            [&mut a, &mut b, &mut c],
        );
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for (got, p) in [a, b, c].iter().zip(&ps) {
            assert_eq!(bits(got), bits(&alone(p)), "width {width}");
        }
        // Attention pads a token's weights with zeros up to the longest token's keys.
        let mut padded = ps[0][..30].to_vec();
        padded.resize(len, 0.0);
        let mut short = vec![0.0; width];
        kernels::weighted_sum::<1, 4>([&ps[0][..30]], &base, stride, [&mut short]);
        assert_eq!(bits(&alone(&padded)), bits(&short), "width {width}");
    }
}

#[test]
fn softmax_matches_f64() {
    let mut rng = Rng(17);
    for n in [1, 3, 4, 7, 64, 701] {
        let x: Vec<f32> = rng.values(n).iter().map(|v| v * 20.0).collect();
        let mut got = x.clone();
        kernels::softmax(&mut got);
        let max = x
            .iter()
            .fold(f64::NEG_INFINITY, |m, &v| m.max(f64::from(v)));
        let sum: f64 = x.iter().map(|&v| (f64::from(v) - max).exp()).sum();
        for (&g, &v) in got.iter().zip(&x) {
            let want = (f64::from(v) - max).exp() / sum;
            assert!(
                (f64::from(g) - want).abs() <= 1e-6 * want + 1e-12,
                "n = {n}: {g} vs {want}"
            );
        }
    }
}
