//! A weight matrix `[rows, cols]` (Hugging Face's `[out, in]`), kept quantized (in a kernel layout) when
//! the file's encoding has a kernel, and its products with activation rows.

use std::ops::Range;
use std::sync::OnceLock;

use super::activations::{QuantizedRow, QuantizedRows};
use super::blocks::{self, Layout};
use super::dot::QK;
use super::{kernels, layer, parallel};
use crate::error::{Result, WispError};
use crate::weights::gguf::TensorInfo;
use crate::weights::lora::LowRank;
use crate::weights::quant;

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
            Layout::BytesMin => kernels::bytes_min(w, xs),
            Layout::Halves => kernels::halves(w, xs),
            Layout::TwoBit => kernels::two_bit(w, xs),
            Layout::ThreeBit => kernels::three_bit(w, xs),
            Layout::FourBit => kernels::four_bit(w, xs),
        }
    }
}

/// About how many bytes of a file [`Matrix::from_gguf`] reads at a time.
const READ_BAND: usize = 4 << 20;

pub(crate) struct Matrix {
    rows: usize,
    cols: usize,
    data: Data,
    /// LoRA adapters' terms, added to every product (the weights themselves stay as the file has them).
    low_rank: Vec<Term>,
}

impl Matrix {
    /// f32 values, row-major.
    pub fn dense(rows: usize, cols: usize, values: Vec<f32>) -> Self {
        Matrix {
            rows,
            cols,
            data: Data::F32(values),
            low_rank: Vec::new(),
        }
    }

    /// The matrix with adapters' terms (their shapes checked against the weight by `Adapters::new`).
    pub fn with_low_rank(mut self, terms: &[LowRank]) -> Self {
        self.low_rank = terms.iter().map(Term::new).collect();
        self
    }

    /// `scale A x` of each low-rank term for each token row, `[term][token * rank + k]`: made once per
    /// pass for every band, with the f32 row kernel (tokens in the same groups as any other product, so
    /// a token's value does not depend on the pass).
    fn low_rank_inputs(&self, rows: &[&[f32]]) -> Vec<Vec<f32>> {
        self.low_rank
            .iter()
            .map(|t| {
                let mut ax = vec![0.0; rows.len() * t.rank];
                let mut outs: Vec<&mut [f32]> = ax.chunks_exact_mut(t.rank).collect();
                let a = Dense {
                    w: &t.a,
                    cols: t.cols,
                };
                band_products(&a, 0..t.rank, rows, &mut outs);
                for v in &mut ax {
                    *v *= t.scale;
                }
                ax
            })
            .collect()
    }

    /// Adds the low-rank terms `B (scale A x)` to the band's products `outs[t]`, `inputs` from
    /// [`Matrix::low_rank_inputs`].
    fn add_low_rank(&self, inputs: &[Vec<f32>], band: Range<usize>, outs: &mut [&mut [f32]]) {
        for (term, ax) in self.low_rank.iter().zip(inputs) {
            for (out, ax) in outs.iter_mut().zip(ax.chunks_exact(term.rank)) {
                term.add_up(ax, band.clone(), out);
            }
        }
    }

    /// A GGUF tensor whose shape the caller has checked is `[rows, cols]`: its blocks converted to a
    /// kernel layout when a kernel reads the type, otherwise dequantized to f32 once here. It is read a
    /// band of rows at a time, so that a file outside memory costs one band beside the result, not a
    /// copy of the tensor (an embedding can be a fifth of the file).
    pub fn from_gguf(t: &TensorInfo, rows: usize, cols: usize) -> Result<Self> {
        let ty = t.ggml_type();
        let (block_len, block_bytes) = ty.block_layout();
        // GGUF rows are whole blocks (ggml requires it); the kernels walk activations QK at a time.
        let whole = cols.is_multiple_of(block_len)
            && cols.is_multiple_of(QK)
            && t.byte_len() == rows * cols / block_len * block_bytes;
        let layout = Layout::of(ty);
        if layout.is_some() && !whole {
            return Err(WispError::InvalidWeights(format!(
                "tensor '{}' ({ty:?}, [{rows}, {cols}]) does not hold whole blocks per row",
                t.name()
            )));
        }
        let file_row = t.byte_len() / rows.max(1);
        let band = (READ_BAND / file_row.max(1)).max(1) * file_row;
        let parts = (0..t.byte_len())
            .step_by(band.max(1))
            .map(|at| t.read(at..(at + band).min(t.byte_len())));
        Ok(match layout {
            Some(layout) => {
                let row_bytes = layout.row_bytes(cols);
                let mut bytes = Vec::with_capacity(rows * row_bytes);
                for part in parts {
                    blocks::convert_into(ty, &part?, &mut bytes);
                }
                Matrix {
                    rows,
                    cols,
                    data: Data::Blocks {
                        layout,
                        bytes,
                        row_bytes,
                    },
                    low_rank: Vec::new(),
                }
            }
            None => {
                let mut values = Vec::with_capacity(rows * cols);
                for part in parts {
                    values.extend(quant::dequantize(t.name(), ty, &part?)?);
                }
                Self::dense(rows, cols, values)
            }
        })
    }

    /// Bytes a product reads from the weights: what bounds a token's time.
    pub fn weight_bytes(&self) -> usize {
        match &self.data {
            Data::F32(v) => v.len() * 4,
            Data::Blocks { bytes, .. } => bytes.len(),
        }
    }

    /// Row `r` as f32 (an embedding lookup, a prefill's panel row). `r` must be below `rows`.
    pub fn row(&self, r: usize, out: &mut [f32]) {
        match &self.data {
            Data::F32(v) => out.copy_from_slice(&v[r * self.cols..(r + 1) * self.cols]),
            Data::Blocks {
                layout,
                bytes,
                row_bytes,
            } => kernels::dequantize_row(*layout, &bytes[r * row_bytes..(r + 1) * row_bytes], out),
        }
    }

    /// `out[t] = W x[t]` for the rows `x[t]` of `x` (`[T, cols]`), into `out` (`[T, rows]`). Each weight
    /// row is read once per pass and used for every token, and a token's result does not depend on
    /// which other tokens share the pass. `pass` picks the arithmetic: [`Pass::Stepwise`] multiplies
    /// one weight row at a time with up to eight tokens (a quantized block decoded once for them, their
    /// activations quantized to i16 once per call, `activations`), so that verifying draft tokens in
    /// one pass gives exactly the logits of one-token steps; [`Pass::Prefill`] (from
    /// [`PANEL_MIN_TOKENS`] tokens on) takes four weight rows at a time (quantized ones dequantized to
    /// f32) and multiplies them with the tokens in register-blocked f32 tiles, about twice as fast per
    /// multiply-add. Bands of weight rows run on the CPU backend's threads (`parallel`); a value does
    /// not depend on which band or thread computes it.
    pub fn matmul(&self, x: &[f32], out: &mut [f32], pass: Pass) -> Result<()> {
        products(&mut [(self, out)], x, pass)
    }

    /// The weight rows `band` times the prepared tokens, into `outs[t]` (one value per row of the band).
    fn band(&self, input: &Input, band: Range<usize>, outs: &mut [&mut [f32]]) {
        let cols = self.cols;
        match &self.data {
            _ if input.tiles => {
                let mut panel = vec![0.0; PANEL_ROWS * cols];
                for (i, rows) in chunks_of(band, PANEL_ROWS) {
                    let n = rows.len();
                    for (r, p) in rows.zip(panel.chunks_exact_mut(cols)) {
                        self.row(r, p);
                    }
                    let ws: [&[f32]; PANEL_ROWS] =
                        std::array::from_fn(|j| &panel[j * cols..(j + 1) * cols]);
                    panel_products(&ws[..n], &input.rows, outs, i);
                }
            }
            Data::F32(w) => band_products(&Dense { w, cols }, band, &input.rows, outs),
            Data::Blocks {
                layout,
                bytes,
                row_bytes,
            } => {
                let codes = input
                    .codes
                    .get_or_init(|| QuantizedRows::new(input.x, cols));
                let xs: Vec<QuantizedRow> = (0..codes.len()).map(|t| codes.row(t)).collect();
                let weights = Quantized {
                    layout: *layout,
                    bytes,
                    row_bytes: *row_bytes,
                };
                band_products(&weights, band, &xs, outs);
            }
        }
    }

    fn quantized(&self) -> bool {
        matches!(self.data, Data::Blocks { .. })
    }
}

/// A LoRA term as the products use it: `A` (`[rank, cols]`) as the file has it, dotted with each token
/// row by the f32 row kernel, and `B` transposed (`[rank, rows]`), so that adding `B (A x)` to a band of
/// outputs sums `rank` rows lane by lane, with no horizontal sums (a dot product of `rank` values per
/// output took four times as long a multiply-add as `A x`).
struct Term {
    a: Vec<f32>,
    cols: usize,
    bt: Vec<f32>,
    rank: usize,
    rows: usize,
    scale: f32,
}

impl Term {
    fn new(t: &LowRank) -> Self {
        let mut bt = vec![0.0; t.rows * t.rank];
        for (i, row) in t.b.chunks_exact(t.rank).enumerate() {
            for (k, &v) in row.iter().enumerate() {
                bt[k * t.rows + i] = v;
            }
        }
        Term {
            a: t.a.clone(),
            cols: t.cols,
            bt,
            rank: t.rank,
            rows: t.rows,
            scale: t.scale,
        }
    }

    /// `out[i] += sum_k B[band.start + i, k] ax[k]`: eight outputs at a time, each summed over `k` in
    /// order in registers and then added, the same operations for an output whichever band holds it.
    fn add_up(&self, ax: &[f32], band: Range<usize>, out: &mut [f32]) {
        let column = |k: usize| &self.bt[k * self.rows + band.start..k * self.rows + band.end];
        let main = band.len() / 8 * 8;
        for (c, chunk) in out[..main].chunks_exact_mut(8).enumerate() {
            let mut acc = [0.0f32; 8];
            for (k, &a) in ax.iter().enumerate() {
                let b = &column(k)[8 * c..8 * c + 8];
                for l in 0..8 {
                    acc[l] += a * b[l];
                }
            }
            for (o, v) in chunk.iter_mut().zip(acc) {
                *o += v;
            }
        }
        for (i, o) in out[main..band.len()].iter_mut().enumerate() {
            let mut acc = 0.0f32;
            for (k, &a) in ax.iter().enumerate() {
                acc += a * column(k)[main + i];
            }
            *o += acc;
        }
    }
}

/// A pass's activations as the products read them, prepared once for every band and every matrix of a
/// group.
struct Input<'a> {
    x: &'a [f32],
    /// The token rows of `x`.
    rows: Vec<&'a [f32]>,
    /// Multiply in f32 tiles ([`Pass::Prefill`] with enough tokens).
    tiles: bool,
    /// `x` quantized for the stepwise integer kernels: made before the loop when a matrix of the group
    /// needs it, so that no piece waits for another to make it.
    codes: OnceLock<QuantizedRows>,
}

impl<'a> Input<'a> {
    /// `x` as rows of `cols` for the products of `group`, or an error when a matrix is not `cols` wide.
    fn new(x: &'a [f32], cols: usize, pass: Pass, group: &[&Matrix]) -> Result<Self> {
        if let Some(m) = group.iter().find(|m| m.cols != cols) {
            return Err(WispError::InvalidInput(format!(
                "a product of rows of {cols} values with a matrix of {} columns",
                m.cols
            )));
        }
        let rows: Vec<&[f32]> = x.chunks_exact(cols.max(1)).collect();
        let tiles = pass == Pass::Prefill && rows.len() >= PANEL_MIN_TOKENS;
        let codes = OnceLock::new();
        if !tiles && group.iter().any(|m| m.quantized()) {
            let _ = codes.set(QuantizedRows::new(x, cols));
        }
        Ok(Input {
            x,
            rows,
            tiles,
            codes,
        })
    }
}

/// `out = W x` (see [`Matrix::matmul`]) for each `(W, out)` of `group`, all with the same input `x`, in
/// one loop: their bands run on the team together (q, k and v).
pub(crate) fn products(group: &mut [(&Matrix, &mut [f32])], x: &[f32], pass: Pass) -> Result<()> {
    let Some(cols) = group.first().map(|(m, _)| m.cols) else {
        return Ok(());
    };
    let matrices: Vec<&Matrix> = group.iter().map(|(m, _)| *m).collect();
    let input = Input::new(x, cols, pass, &matrices)?;
    // Saturating: wasm32's usize passes 4 G for a vocabulary head and a chunk of tokens.
    let work = matrices.iter().fold(0usize, |w, m| {
        w.saturating_add(m.rows.saturating_mul(x.len()))
    });
    let low_rank: Vec<_> = matrices
        .iter()
        .map(|m| m.low_rank_inputs(&input.rows))
        .collect();
    let outs = group
        .iter_mut()
        .map(|(m, out)| (&mut **out, m.rows))
        .collect();
    parallel::for_each_band_of(outs, work, |i, band, outs| {
        matrices[i].band(&input, band.clone(), outs);
        matrices[i].add_low_rank(&low_rank[i], band, outs);
    });
    Ok(())
}

/// SwiGLU of two products, `out = silu(gate x) * (up x)` (`layer::swiglu`), band by band in one loop:
/// each piece computes its rows of both products and the activation, so the activation runs on the
/// team too and `up x` needs no buffer of its own.
pub(crate) fn swiglu_products(
    gate: &Matrix,
    up: &Matrix,
    x: &[f32],
    out: &mut [f32],
    pass: Pass,
) -> Result<()> {
    if up.rows != gate.rows {
        return Err(WispError::InvalidInput(format!(
            "SwiGLU of products with {} and {} rows",
            gate.rows, up.rows
        )));
    }
    let input = Input::new(x, gate.cols, pass, &[gate, up])?;
    let work = gate.rows.saturating_mul(x.len()).saturating_mul(2);
    let (gate_low, up_low) = (
        gate.low_rank_inputs(&input.rows),
        up.low_rank_inputs(&input.rows),
    );
    parallel::for_each_band_of(vec![(out, gate.rows)], work, |_, band, outs| {
        gate.band(&input, band.clone(), outs);
        gate.add_low_rank(&gate_low, band.clone(), outs);
        let mut ups = vec![0.0; outs.len() * band.len()];
        let mut up_outs: Vec<&mut [f32]> = ups.chunks_exact_mut(band.len().max(1)).collect();
        up.band(&input, band.clone(), &mut up_outs);
        up.add_low_rank(&up_low, band, &mut up_outs);
        for (g, u) in outs.iter_mut().zip(&up_outs) {
            layer::swiglu(g, u);
        }
    });
    Ok(())
}

/// What a pass's products must agree with (see [`Matrix::matmul`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Pass {
    /// Each token's values equal those of a pass of that token alone: decoding and draft verification.
    Stepwise,
    /// A prompt's chunk, whose values need only be the same however its tokens are grouped.
    Prefill,
}

/// Tokens from which a prefill pass multiplies in tiles: each dequantized row then serves enough tokens
/// to repay its conversion (and one-token tiles of f32 rows measured slower than the row kernel).
pub(crate) const PANEL_MIN_TOKENS: usize = 8;

/// Weight rows converted to f32 together (`Matrix::row`): each token tile is loaded once for all of them.
const PANEL_ROWS: usize = 4;

/// `range` in consecutive pieces of at most `size`, each with its offset from `range.start`.
fn chunks_of(range: Range<usize>, size: usize) -> impl Iterator<Item = (usize, Range<usize>)> {
    let Range { start, end } = range;
    (start..end)
        .step_by(size)
        .map(move |r| (r - start, r..(r + size).min(end)))
}

/// The f32 weight rows `ws` (the band's rows `first..`) times every token `xs[t]`, into `outs[t]`:
/// tokens four at a time against two weight rows (eight accumulators, which fit wasm engines'
/// registers), fewer tokens against up to four rows.
fn panel_products(ws: &[&[f32]], xs: &[&[f32]], outs: &mut [&mut [f32]], first: usize) {
    let mut t = 0;
    while t < xs.len() {
        let n = (xs.len() - t).min(4);
        let part = &xs[t..t + n];
        match n {
            4 => rows_tile::<2, 4>(ws, part, outs, first, t),
            3 => rows_tile::<2, 3>(ws, part, outs, first, t),
            2 => rows_tile::<4, 2>(ws, part, outs, first, t),
            _ => rows_tile::<4, 1>(ws, part, outs, first, t),
        }
        t += n;
    }
}

/// The weight rows `ws` times the `T` tokens `part` (tokens `t0..` of the pass), `R` rows at a time.
fn rows_tile<const R: usize, const T: usize>(
    ws: &[&[f32]],
    part: &[&[f32]],
    outs: &mut [&mut [f32]],
    first: usize,
    t0: usize,
) {
    let xs: [&[f32]; T] = rows_of(part);
    let mut put = |r: usize, values: [f32; T]| {
        for (t, v) in values.into_iter().enumerate() {
            outs[t0 + t][first + r] = v;
        }
    };
    let mut r = 0;
    while ws.len() - r >= R {
        let tile = kernels::tile::<R, T>(rows_of(&ws[r..r + R]), xs);
        for (j, values) in tile.into_iter().enumerate() {
            put(r + j, values);
        }
        r += R;
    }
    for (j, w) in ws[r..].iter().enumerate() {
        let [values] = kernels::tile::<1, T>([w], xs);
        put(r + j, values);
    }
}

/// Weight rows and the kernel that multiplies one of them with `N` activation rows of type `X`.
trait RowKernel {
    type X: Copy;
    fn dot<const N: usize>(&self, row: usize, xs: [Self::X; N]) -> [f32; N];
}

struct Dense<'a> {
    w: &'a [f32],
    cols: usize,
}

impl<'a> RowKernel for Dense<'a> {
    type X = &'a [f32];
    fn dot<const N: usize>(&self, row: usize, xs: [&'a [f32]; N]) -> [f32; N] {
        kernels::dense(&self.w[row * self.cols..(row + 1) * self.cols], xs)
    }
}

struct Quantized<'a> {
    layout: Layout,
    bytes: &'a [u8],
    row_bytes: usize,
}

impl<'a> RowKernel for Quantized<'a> {
    type X = QuantizedRow<'a>;
    fn dot<const N: usize>(&self, row: usize, xs: [QuantizedRow<'a>; N]) -> [f32; N] {
        let w = &self.bytes[row * self.row_bytes..(row + 1) * self.row_bytes];
        self.layout.dot(w, xs)
    }
}

/// The weight rows `band` times every token `xs[t]`, into `outs[t]` (one value per row of the band):
/// tokens in groups of 8, 4, 2 and 1, each weight row read once per group and multiplied with all its
/// tokens. The groups are the same for every band, so a value does not depend on the band.
fn band_products<K: RowKernel>(k: &K, band: Range<usize>, xs: &[K::X], outs: &mut [&mut [f32]]) {
    let mut first = 0;
    for group in [8, 4, 2, 1] {
        while xs.len() - first >= group {
            let part = &xs[first..first + group];
            for (i, r) in band.clone().enumerate() {
                let mut put = |t: usize, v: f32| outs[first + t][i] = v;
                match group {
                    8 => each(k.dot(r, rows_of::<_, 8>(part)), &mut put),
                    4 => each(k.dot(r, rows_of::<_, 4>(part)), &mut put),
                    2 => each(k.dot(r, rows_of::<_, 2>(part)), &mut put),
                    _ => each(k.dot(r, rows_of::<_, 1>(part)), &mut put),
                }
            }
            first += group;
        }
    }
}

/// The first `N` rows of `part` (which holds exactly `N`) as an array.
fn rows_of<X: Copy, const N: usize>(part: &[X]) -> [X; N] {
    std::array::from_fn(|t| part[t])
}

fn each<const N: usize>(values: [f32; N], put: &mut impl FnMut(usize, f32)) {
    for (t, v) in values.into_iter().enumerate() {
        put(t, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::test_gguf::one_tensor;
    use crate::backend::cpu::test_rng::Rng;
    use crate::weights::gguf::GgufFile;
    use crate::weights::test_outside::Outside;
    use crate::weights::FileBytes;

    /// A one-tensor GGUF: `rows` x `cols` of ggml type `ty` (its id) taking `row_bytes` a row, filled
    /// with a byte pattern.
    fn gguf(ty: u32, rows: usize, cols: usize, row_bytes: usize) -> Vec<u8> {
        // Small exponents only, so that every f16 in it (scales, F16 weights) is finite.
        let data: Vec<u8> = (0..rows * row_bytes).map(|i| (i % 61) as u8).collect();
        one_tensor(ty, rows, cols, &data)
    }

    fn contents(m: &Matrix) -> Vec<u8> {
        match &m.data {
            Data::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Data::Blocks { bytes, .. } => bytes.clone(),
        }
    }

    #[test]
    fn a_tensor_outside_memory_is_read_a_band_at_a_time_into_the_same_matrix() {
        // Q8_0 (a kernel layout) and F16 (dequantized to f32), each more than one band.
        for (ty, rows, cols, row_bytes) in [(8, 1000, 4096, 4096 / 32 * 34), (1, 600, 4096, 8192)] {
            let bytes = gguf(ty, rows, cols, row_bytes);
            let want = {
                let file = GgufFile::parse(&bytes).unwrap();
                Matrix::from_gguf(file.tensor("w").unwrap(), rows, cols).unwrap()
            };
            let outside = Outside::new(bytes);
            let file = FileBytes::Outside(&outside);
            let header = file.header().unwrap();
            let parsed = GgufFile::open(&header, file).unwrap();
            outside.reads.lock().unwrap().clear();
            let got = Matrix::from_gguf(parsed.tensor("w").unwrap(), rows, cols).unwrap();
            assert_eq!(contents(&got), contents(&want), "type {ty}");
            let reads = outside.reads.lock().unwrap();
            assert!(reads.len() > 1, "type {ty}: {reads:?}");
            assert!(reads
                .iter()
                .all(|r| r.len() <= READ_BAND && r.len() % row_bytes == 0));
            assert!(reads.windows(2).all(|w| w[0].end == w[1].start));
            assert_eq!(
                reads.iter().map(Range::len).sum::<usize>(),
                rows * row_bytes
            );
        }
    }

    /// A term of rank `rank` for a `[rows, cols]` weight, values from `seed`.
    fn term(rows: usize, cols: usize, rank: usize, scale: f32, seed: u64) -> LowRank {
        let mut rng = Rng(seed);
        LowRank {
            a: rng.values(rank * cols),
            b: rng.values(rows * rank),
            rank,
            rows,
            cols,
            scale,
        }
    }

    #[test]
    fn low_rank_terms_add_scale_b_a_x_and_a_token_does_not_depend_on_its_pass() {
        let (rows, cols, tokens) = (37, 70, 11);
        let mut rng = Rng(7);
        let w = rng.values(rows * cols);
        let x = rng.values(tokens * cols);
        let terms = [term(rows, cols, 3, 0.5, 1), term(rows, cols, 16, -2.0, 2)];
        let m = Matrix::dense(rows, cols, w.clone()).with_low_rank(&terms);
        let dot = |a: &[f32], b: &[f32]| {
            a.iter()
                .zip(b)
                .map(|(&p, &q)| p as f64 * q as f64)
                .sum::<f64>()
        };
        let mut prefill = vec![0.0; tokens * rows];
        m.matmul(&x, &mut prefill, Pass::Prefill).unwrap();
        let mut out = vec![0.0; tokens * rows];
        m.matmul(&x, &mut out, Pass::Stepwise).unwrap();
        for (t, xt) in x.chunks_exact(cols).enumerate() {
            for r in 0..rows {
                let mut want = dot(&w[r * cols..(r + 1) * cols], xt);
                for k in &terms {
                    let ax: Vec<f64> = k.a.chunks_exact(cols).map(|a| dot(a, xt)).collect();
                    let bx: f64 = (0..k.rank)
                        .map(|j| k.b[r * k.rank + j] as f64 * ax[j])
                        .sum();
                    want += k.scale as f64 * bx;
                }
                for (pass, got) in [
                    ("stepwise", out[t * rows + r]),
                    ("prefill", prefill[t * rows + r]),
                ] {
                    let got = got as f64;
                    assert!(
                        (got - want).abs() <= 1e-4 * (1.0 + want.abs()),
                        "{pass}: token {t} row {r}: {got} vs {want}"
                    );
                }
            }
            let mut alone = vec![0.0; rows];
            m.matmul(xt, &mut alone, Pass::Stepwise).unwrap();
            assert_eq!(alone, out[t * rows..(t + 1) * rows], "token {t}");
        }
        // A thread's band of rows: the same values as the whole.
        let inputs = m.low_rank_inputs(&x.chunks_exact(cols).collect::<Vec<_>>());
        let mut whole = vec![0.0; tokens * rows];
        let mut outs: Vec<&mut [f32]> = whole.chunks_exact_mut(rows).collect();
        m.add_low_rank(&inputs, 0..rows, &mut outs);
        for band in [0..13, 13..rows] {
            let mut part = vec![0.0; tokens * band.len()];
            let mut outs: Vec<&mut [f32]> = part.chunks_exact_mut(band.len()).collect();
            m.add_low_rank(&inputs, band.clone(), &mut outs);
            for t in 0..tokens {
                assert_eq!(
                    part[t * band.len()..(t + 1) * band.len()],
                    whole[t * rows + band.start..t * rows + band.end]
                );
            }
        }
    }
}
