//! A weight matrix `[rows, cols]` (Hugging Face's `[out, in]`), kept quantized (in a kernel layout) when
//! the file's encoding has a kernel, and its products with activation rows.

use super::activations::{QuantizedRow, QuantizedRows};
use super::blocks::{self, Layout};
use super::dot::QK;
use super::kernels;
use crate::error::{Result, WispError};
use crate::weights::gguf::TensorInfo;

/// Row data: f32 values, or blocks in a kernel layout.
enum Data {
    F32(Vec<f32>),
    Blocks {
        layout: Layout,
        bytes: Vec<u8>,
        row_bytes: usize,
    },
}

impl Layout {
    /// One weight row times `N` activation rows.
    fn dot<const N: usize>(self, w: &[u8], xs: [QuantizedRow; N]) -> [f32; N] {
        match self {
            Layout::Nibbles => kernels::nibbles(w, xs),
            Layout::Bytes => kernels::bytes(w, xs),
        }
    }
}

pub(crate) struct Matrix {
    rows: usize,
    cols: usize,
    data: Data,
}

impl Matrix {
    /// f32 values, row-major.
    pub fn dense(rows: usize, cols: usize, values: Vec<f32>) -> Self {
        Matrix {
            rows,
            cols,
            data: Data::F32(values),
        }
    }

    /// A GGUF tensor whose shape the caller has checked is `[rows, cols]`: its blocks converted to a
    /// kernel layout when a kernel reads the type, otherwise dequantized to f32 once here.
    pub fn from_gguf(t: &TensorInfo, rows: usize, cols: usize) -> Result<Self> {
        let ty = t.ggml_type();
        let (block_len, block_bytes) = ty.block_layout();
        // GGUF rows are whole blocks (ggml requires it); the kernels walk activations QK at a time.
        let whole = cols.is_multiple_of(block_len)
            && cols.is_multiple_of(QK)
            && t.data().len() == rows * cols / block_len * block_bytes;
        if Layout::of(ty).is_some() && !whole {
            return Err(WispError::InvalidWeights(format!(
                "tensor '{}' ({ty:?}, [{rows}, {cols}]) does not hold whole blocks per row",
                t.name()
            )));
        }
        Ok(match blocks::convert(ty, t.data()) {
            Some((layout, bytes)) => Matrix {
                rows,
                cols,
                data: Data::Blocks {
                    layout,
                    bytes,
                    row_bytes: cols / QK * layout.block_bytes(),
                },
            },
            None => Self::dense(rows, cols, t.to_f32()?),
        })
    }

    /// Bytes a product reads from the weights: what bounds a token's time.
    pub fn weight_bytes(&self) -> usize {
        match &self.data {
            Data::F32(v) => v.len() * 4,
            Data::Blocks { bytes, .. } => bytes.len(),
        }
    }

    /// Row `r` as f32 (an embedding lookup). `r` must be below `rows`.
    pub fn row(&self, r: usize, out: &mut [f32]) -> Result<()> {
        match &self.data {
            Data::F32(v) => out.copy_from_slice(&v[r * self.cols..(r + 1) * self.cols]),
            Data::Blocks {
                layout,
                bytes,
                row_bytes,
            } => {
                let row = &bytes[r * row_bytes..(r + 1) * row_bytes];
                for (b, o) in row
                    .chunks_exact(layout.block_bytes())
                    .zip(out.chunks_exact_mut(QK))
                {
                    layout.dequantize(b, o);
                }
            }
        }
        Ok(())
    }

    /// `out[t] = W x[t]` for the rows `x[t]` of `x` (`[T, cols]`), into `out` (`[T, rows]`). Each weight
    /// row is read once per pass and used for every token; a quantized block is decoded once for up to
    /// eight tokens, whose activations are quantized to i16 once per call (`activations`). A token's result is the same whatever other tokens share the pass, so verifying
    /// draft tokens in one pass gives exactly the logits of one-token steps.
    pub fn matmul(&self, x: &[f32], out: &mut [f32]) -> Result<()> {
        let (rows, cols) = (self.rows, self.cols);
        match &self.data {
            Data::F32(w) => {
                for (r, wr) in w.chunks_exact(cols).enumerate() {
                    for (t, xt) in x.chunks_exact(cols).enumerate() {
                        out[t * rows + r] = kernels::dense(wr, xt);
                    }
                }
            }
            Data::Blocks {
                layout,
                bytes,
                row_bytes,
            } => {
                let xs = QuantizedRows::new(x, cols);
                let xs: Vec<QuantizedRow> = (0..xs.len()).map(|t| xs.row(t)).collect();
                let mut first = 0;
                for group in [8, 4, 2, 1] {
                    while xs.len() - first >= group {
                        let part = &xs[first..first + group];
                        for (r, wr) in bytes.chunks_exact(*row_bytes).enumerate() {
                            let mut put = |t: usize, v: f32| out[(first + t) * rows + r] = v;
                            match group {
                                8 => each(layout.dot(wr, rows_of::<8>(part)), &mut put),
                                4 => each(layout.dot(wr, rows_of::<4>(part)), &mut put),
                                2 => each(layout.dot(wr, rows_of::<2>(part)), &mut put),
                                _ => each(layout.dot(wr, rows_of::<1>(part)), &mut put),
                            }
                        }
                        first += group;
                    }
                }
            }
        }
        Ok(())
    }
}

/// The first `N` rows of `part` (which holds exactly `N`) as an array.
fn rows_of<'a, const N: usize>(part: &[QuantizedRow<'a>]) -> [QuantizedRow<'a>; N] {
    std::array::from_fn(|t| part[t])
}

fn each<const N: usize>(values: [f32; N], put: &mut impl FnMut(usize, f32)) {
    for (t, v) in values.into_iter().enumerate() {
        put(t, v);
    }
}
