//! Activations quantized to 8 bits in blocks of 32 (llama.cpp's Q8_1), so that the dot products with
//! quantized weight rows run on integers.

/// Elements per activation block: the block length of Q8_0, Q4_0, Q4_1 and of a Q4_K sub-block.
pub(crate) const QK: usize = 32;

/// One quantized row, borrowed from [`Q8Rows`].
#[derive(Clone, Copy)]
pub(crate) struct Q8Row<'a> {
    /// Scale of each block: x ≈ d * q.
    pub d: &'a [f32],
    /// `d * sum(q)` of each block: what an affine weight block's offset multiplies.
    pub s: &'a [f32],
    pub q: &'a [i8],
}

/// `rows` activation rows of `cols` values (a multiple of [`QK`]), quantized.
#[derive(Default)]
pub(crate) struct Q8Rows {
    cols: usize,
    d: Vec<f32>,
    s: Vec<f32>,
    q: Vec<i8>,
}

impl Q8Rows {
    /// Quantizes `x`, rows of `cols` values, reusing this buffer's memory.
    pub fn quantize(&mut self, x: &[f32], cols: usize) {
        let blocks = x.len() / QK;
        self.cols = cols;
        self.d.resize(blocks, 0.0);
        self.s.resize(blocks, 0.0);
        self.q.resize(blocks * QK, 0);
        let parts = self.d.iter_mut().zip(self.s.iter_mut());
        for ((xb, qb), (d, s)) in x
            .chunks_exact(QK)
            .zip(self.q.chunks_exact_mut(QK))
            .zip(parts)
        {
            let amax = xb.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            let scale = amax / 127.0;
            // An all-zero block keeps q = 0 rather than dividing by zero.
            let inv = if scale > 0.0 { 1.0 / scale } else { 0.0 };
            let mut sum = 0i32;
            for (q, &v) in qb.iter_mut().zip(xb) {
                // |v * inv| <= 127 up to rounding, so the cast cannot saturate.
                *q = (v * inv).round() as i8;
                sum += i32::from(*q);
            }
            *d = scale;
            *s = scale * sum as f32;
        }
    }

    pub fn row(&self, r: usize) -> Q8Row<'_> {
        let nb = self.cols / QK;
        Q8Row {
            d: &self.d[r * nb..(r + 1) * nb],
            s: &self.s[r * nb..(r + 1) * nb],
            q: &self.q[r * self.cols..(r + 1) * self.cols],
        }
    }
}
