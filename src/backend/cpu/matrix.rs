//! A weight matrix `[rows, cols]` (Hugging Face's `[out, in]`), kept in its file encoding when a kernel
//! can read that directly, and its products with activation rows.

use std::ops::Range;

use super::dot::QK;
use super::{kernels, parallel};
use crate::error::{Result, WispError};
use crate::weights::gguf::TensorInfo;
use crate::weights::quant::{self, GgmlType};

/// Row data: f32 values, or whole ggml blocks of one of the types the kernels read.
enum Data {
    F32(Vec<f32>),
    Blocks {
        ty: GgmlType,
        kernel: Kernel,
        bytes: Vec<u8>,
        row_bytes: usize,
    },
}

/// The block types with a kernel that reads them directly.
#[derive(Clone, Copy)]
enum Kernel {
    Q8_0,
    Q4_0,
    Q4_1,
    Q4K,
}

impl Kernel {
    /// One weight row times `N` activation rows.
    fn dot<const N: usize>(self, w: &[u8], xs: [&[f32]; N]) -> [f32; N] {
        match self {
            Kernel::Q8_0 => kernels::q8_0(w, xs),
            Kernel::Q4_0 => kernels::q4_0(w, xs),
            Kernel::Q4_1 => kernels::q4_1(w, xs),
            Kernel::Q4K => kernels::q4_k(w, xs),
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

    /// A GGUF tensor whose shape the caller has checked is `[rows, cols]`: its blocks as they are when a
    /// kernel reads the type, otherwise dequantized to f32 once here.
    pub fn from_gguf(t: &TensorInfo, rows: usize, cols: usize) -> Result<Self> {
        let ty = t.ggml_type();
        let kernel = match ty {
            GgmlType::Q8_0 => Kernel::Q8_0,
            GgmlType::Q4_0 => Kernel::Q4_0,
            GgmlType::Q4_1 => Kernel::Q4_1,
            GgmlType::Q4_K => Kernel::Q4K,
            _ => return Ok(Self::dense(rows, cols, t.to_f32()?)),
        };
        let (block_len, block_bytes) = ty.block_layout();
        // GGUF rows are whole blocks (ggml requires it); the kernels walk activations QK at a time.
        if !cols.is_multiple_of(block_len)
            || !cols.is_multiple_of(QK)
            || t.data().len() != rows * cols / block_len * block_bytes
        {
            return Err(WispError::InvalidWeights(format!(
                "tensor '{}' ({ty:?}, [{rows}, {cols}]) does not hold whole blocks per row",
                t.name()
            )));
        }
        Ok(Matrix {
            rows,
            cols,
            data: Data::Blocks {
                ty,
                kernel,
                bytes: t.data().to_vec(),
                row_bytes: cols / block_len * block_bytes,
            },
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
                ty,
                bytes,
                row_bytes,
                ..
            } => {
                let values = quant::dequantize(
                    "embedding row",
                    *ty,
                    &bytes[r * row_bytes..(r + 1) * row_bytes],
                )?;
                out.copy_from_slice(&values);
            }
        }
        Ok(())
    }

    /// `out[t] = W x[t]` for the rows `x[t]` of `x` (`[T, cols]`), into `out` (`[T, rows]`). Each weight
    /// row is read once per pass and used for every token; a quantized block is decoded once for up to
    /// eight tokens. A token's result is the same whatever other tokens share the pass, so verifying
    /// draft tokens in one pass gives exactly the logits of one-token steps. Bands of weight rows run on
    /// the CPU backend's threads (`parallel`); a value does not depend on which band or thread computes it.
    pub fn matmul(&self, x: &[f32], out: &mut [f32]) -> Result<()> {
        let xs: Vec<&[f32]> = x.chunks_exact(self.cols).collect();
        let work = self.rows * self.cols * xs.len();
        parallel::for_each_band(out, self.rows, work, |band, outs| {
            self.band_product(&xs, band, outs)
        });
        Ok(())
    }

    /// The weight rows `band` times every token `xs[t]`, into `outs[t]` (one value per row of the band).
    fn band_product(&self, xs: &[&[f32]], band: Range<usize>, outs: &mut [&mut [f32]]) {
        match &self.data {
            Data::F32(w) => {
                let rows = &w[band.start * self.cols..band.end * self.cols];
                for (r, wr) in rows.chunks_exact(self.cols).enumerate() {
                    for (t, xt) in xs.iter().enumerate() {
                        outs[t][r] = kernels::dense(wr, xt);
                    }
                }
            }
            Data::Blocks {
                kernel,
                bytes,
                row_bytes,
                ..
            } => {
                let rows = &bytes[band.start * row_bytes..band.end * row_bytes];
                let mut first = 0;
                for group in [8, 4, 2, 1] {
                    while xs.len() - first >= group {
                        let part = &xs[first..first + group];
                        for (r, wr) in rows.chunks_exact(*row_bytes).enumerate() {
                            let mut put = |t: usize, v: f32| outs[first + t][r] = v;
                            match group {
                                8 => each(kernel.dot(wr, rows_of::<8>(part)), &mut put),
                                4 => each(kernel.dot(wr, rows_of::<4>(part)), &mut put),
                                2 => each(kernel.dot(wr, rows_of::<2>(part)), &mut put),
                                _ => each(kernel.dot(wr, rows_of::<1>(part)), &mut put),
                            }
                        }
                        first += group;
                    }
                }
            }
        }
    }
}

/// The first `N` rows of `part` (which holds exactly `N`) as an array.
fn rows_of<'a, const N: usize>(part: &[&'a [f32]]) -> [&'a [f32]; N] {
    std::array::from_fn(|t| part[t])
}

fn each<const N: usize>(values: [f32; N], put: &mut impl FnMut(usize, f32)) {
    for (t, v) in values.into_iter().enumerate() {
        put(t, v);
    }
}
