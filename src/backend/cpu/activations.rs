//! Activation rows as the quantized kernels read them: each block of `QK` values as i16 with one f32
//! scale (its largest magnitude maps to 32767), plus the block's f32 sum for the weights' offset terms and
//! the integer sums of its two halves' codes for the per-half offsets of Q2_K.
//!
//! With i16 activations a block's dot product is exact integer arithmetic (wasm's `i32x4.dot_i16x8_s`:
//! 8 multiply-adds per instruction, against 4 multiplies and 4 adds in f32), and only one scaling per
//! block remains. Rounding to 16 bits moves a product by at most half a step of the block's scale,
//! 1/65534 of its largest value; 8 bits (llama.cpp's choice) moved SmolLM2's logits by up to 0.47 and
//! flipped a greedy token.

use super::dot::QK;

/// The largest i16 magnitude used, symmetric so that negating a block negates its codes.
const LEVELS: f32 = 32767.0;

/// `T` rows of `cols` activations (`cols` a multiple of `QK`), quantized block by block.
pub(crate) struct QuantizedRows {
    cols: usize,
    codes: Vec<i16>,
    scales: Vec<f32>,
    sums: Vec<f32>,
    half_sums: Vec<i32>,
}

/// One row of [`QuantizedRows`]: block `b` is `codes[b * QK..][..QK] * scales[b]`, summing to `sums[b]`;
/// `half_sums[2 b + h]` is the sum of the codes of its half `h` (at most 16 * 32767 in magnitude).
#[derive(Clone, Copy)]
pub(crate) struct QuantizedRow<'a> {
    pub codes: &'a [i16],
    pub scales: &'a [f32],
    pub sums: &'a [f32],
    pub half_sums: &'a [i32],
}

impl QuantizedRows {
    /// Quantizes the rows of `x` (`[T, cols]`). Each row is quantized on its own, so a token's codes do
    /// not depend on the other tokens of the pass.
    pub fn new(x: &[f32], cols: usize) -> Self {
        debug_assert!(cols.is_multiple_of(QK) && x.len().is_multiple_of(cols));
        let blocks = x.len() / QK;
        let mut rows = QuantizedRows {
            cols,
            codes: Vec::with_capacity(x.len()),
            scales: Vec::with_capacity(blocks),
            sums: Vec::with_capacity(blocks),
            half_sums: Vec::new(),
        };
        for block in x.chunks_exact(QK) {
            let max = block.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            let (scale, inverse) = if max > 0.0 && max.is_finite() {
                (max / LEVELS, LEVELS / max)
            } else {
                (0.0, 0.0)
            };
            rows.codes.extend(
                block
                    .iter()
                    .map(|v| (v * inverse).round().clamp(-LEVELS, LEVELS) as i16),
            );
            rows.scales.push(scale);
            rows.sums.push(block.iter().sum());
        }
        rows.half_sums = rows
            .codes
            .chunks_exact(QK / 2)
            .map(|half| half.iter().map(|&c| i32::from(c)).sum())
            .collect();
        rows
    }

    pub fn len(&self) -> usize {
        self.scales.len() * QK / self.cols
    }

    /// Row `t`, below `len()`.
    pub fn row(&self, t: usize) -> QuantizedRow<'_> {
        let blocks = self.cols / QK;
        QuantizedRow {
            codes: &self.codes[t * self.cols..(t + 1) * self.cols],
            scales: &self.scales[t * blocks..(t + 1) * blocks],
            sums: &self.sums[t * blocks..(t + 1) * blocks],
            half_sums: &self.half_sums[2 * t * blocks..2 * (t + 1) * blocks],
        }
    }
}
