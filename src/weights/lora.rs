//! LoRA adapters in llama.cpp's GGUF format (what its `convert_lora_to_gguf.py` writes, and llama.cpp and
//! wllama load): `general.type = "adapter"`, `adapter.type = "lora"`, `adapter.lora.alpha`, and for each
//! adapted weight `W` (`[out, in]`) the tensors `<W's GGUF name>.lora_a` (`[rank, in]`) and `.lora_b`
//! (`[out, rank]`). A product with the adapted weight is `W x + scale B (A x)`, `scale` being the user's
//! scale times `alpha / rank` (the user's scale alone when alpha is 0 or absent), as llama.cpp computes it.

use std::collections::BTreeMap;

use super::gguf::GgufFile;
use crate::error::{Result, WispError};

/// One adapted weight's low-rank term.
#[derive(Debug, Clone)]
pub struct LowRank {
    /// `[rank, cols]`, row-major.
    pub a: Vec<f32>,
    /// `[rows, rank]`, row-major.
    pub b: Vec<f32>,
    pub rank: usize,
    pub rows: usize,
    pub cols: usize,
    pub scale: f32,
}

impl LowRank {
    /// `W += scale B A` for the row-major `w` (`[rows, cols]`): the adapter merged into f32 weights.
    pub fn merge_into(&self, w: &mut [f32]) {
        for (row, b) in w
            .chunks_exact_mut(self.cols)
            .zip(self.b.chunks_exact(self.rank))
        {
            for (k, &bk) in b.iter().enumerate() {
                let s = bk * self.scale;
                let a = &self.a[k * self.cols..(k + 1) * self.cols];
                for (v, &ak) in row.iter_mut().zip(a) {
                    *v += s * ak;
                }
            }
        }
    }

    /// The term with its output rows reordered: `rows[i]` is the adapter's row for output row `i`.
    pub fn permute_rows(&mut self, order: &[usize]) {
        let b = order
            .iter()
            .flat_map(|&r| self.b[r * self.rank..(r + 1) * self.rank].iter().copied())
            .collect();
        self.b = b;
    }
}

/// An adapter's terms by the GGUF name of the weight each one adapts.
#[derive(Debug, Clone, Default)]
pub struct Adapter {
    pub terms: BTreeMap<String, LowRank>,
}

fn bad(msg: impl Into<String>) -> WispError {
    WispError::InvalidAdapter(msg.into())
}

impl Adapter {
    /// Parses an adapter for a base of architecture `arch`, at the user's `scale`.
    pub fn parse(bytes: &[u8], arch: &str, scale: f32) -> Result<Self> {
        if !scale.is_finite() {
            return Err(bad(format!(
                "the scale is {scale}; it must be a finite number"
            )));
        }
        if !bytes.starts_with(b"GGUF") {
            return Err(bad("not a GGUF file (no 'GGUF' magic)"));
        }
        let file = GgufFile::parse(bytes).map_err(|e| bad(e.to_string()))?;
        let meta = file.metadata();
        let str_key = |k: &str| meta.get(k).and_then(|v| v.as_str());
        if str_key("general.type") != Some("adapter") || str_key("adapter.type") != Some("lora") {
            return Err(bad(
                "the GGUF file is not a LoRA adapter (general.type must be \"adapter\" and adapter.type \"lora\")",
            ));
        }
        match str_key("general.architecture") {
            Some(a) if a == arch => {}
            Some(a) => {
                return Err(bad(format!(
                    "the adapter is for architecture '{a}'; the model is '{arch}'"
                )))
            }
            None => return Err(bad("the adapter has no general.architecture")),
        }
        let alpha = match meta.get("adapter.lora.alpha") {
            None => 0.0,
            Some(v) => v
                .as_f64()
                .ok_or_else(|| bad("adapter.lora.alpha is not a number"))?,
        };
        if !alpha.is_finite() || alpha < 0.0 {
            return Err(bad(format!(
                "adapter.lora.alpha is {alpha}; it must be a finite number >= 0"
            )));
        }
        let mut halves: BTreeMap<&str, [Option<&super::gguf::TensorInfo>; 2]> = BTreeMap::new();
        for t in file.tensors() {
            let (weight, half) = if let Some(w) = t.name().strip_suffix(".lora_a") {
                (w, 0)
            } else if let Some(w) = t.name().strip_suffix(".lora_b") {
                (w, 1)
            } else {
                return Err(bad(format!(
                    "tensor '{}' is neither a .lora_a nor a .lora_b",
                    t.name()
                )));
            };
            halves.entry(weight).or_default()[half] = Some(t);
        }
        if halves.is_empty() {
            return Err(bad("the adapter has no tensors"));
        }
        let mut terms = BTreeMap::new();
        for (weight, pair) in halves {
            let [Some(a), Some(b)] = pair else {
                let (has, lacks) = if pair[0].is_some() {
                    ("lora_a", "lora_b")
                } else {
                    ("lora_b", "lora_a")
                };
                return Err(bad(format!("'{weight}' has a {has} but no {lacks}")));
            };
            let (sa, sb) = (a.shape(), b.shape());
            let (&[rank, cols], &[rows, rank_b]) = (sa.as_slice(), sb.as_slice()) else {
                return Err(bad(format!(
                    "'{weight}': lora_a has shape {sa:?} and lora_b {sb:?}; both must be matrices"
                )));
            };
            if rank == 0 || rank != rank_b {
                return Err(bad(format!(
                    "'{weight}': lora_a has shape {sa:?} and lora_b {sb:?}: their ranks differ"
                )));
            }
            let f32s = |t: &super::gguf::TensorInfo| {
                t.to_f32().map_err(|e| bad(format!("'{}': {e}", t.name())))
            };
            let (a, b) = (f32s(a)?, f32s(b)?);
            if let Some(v) = a.iter().chain(&b).find(|v| !v.is_finite()) {
                return Err(bad(format!("'{weight}' holds a non-finite value ({v})")));
            }
            let scale = if alpha > 0.0 {
                scale * (alpha / rank as f64) as f32
            } else {
                scale
            };
            terms.insert(
                weight.to_string(),
                LowRank {
                    a,
                    b,
                    rank,
                    rows,
                    cols,
                    scale,
                },
            );
        }
        Ok(Adapter { terms })
    }
}

/// Adapters as a model's weights see them: every term by the GGUF name of the weight it adapts.
#[derive(Debug, Clone, Default)]
pub struct Adapters {
    terms: BTreeMap<String, Vec<LowRank>>,
}

impl Adapters {
    /// The adapters' terms, each checked to adapt one of `weights` (GGUF name and `[rows, cols]`).
    pub fn new(adapters: Vec<Adapter>, weights: &BTreeMap<String, (usize, usize)>) -> Result<Self> {
        let mut terms: BTreeMap<String, Vec<LowRank>> = BTreeMap::new();
        for adapter in adapters {
            for (name, term) in adapter.terms {
                let Some(&(rows, cols)) = weights.get(&name) else {
                    return Err(bad(format!(
                        "tensor '{name}.lora_a' names no weight this model adapts"
                    )));
                };
                if (term.rows, term.cols) != (rows, cols) {
                    return Err(bad(format!(
                        "'{name}': the adapter is [{}, {}] (lora_b rows, lora_a columns); the weight is [{rows}, {cols}]",
                        term.rows, term.cols
                    )));
                }
                terms.entry(name).or_default().push(term);
            }
        }
        Ok(Adapters { terms })
    }

    /// The terms of the weight with this GGUF name.
    pub fn terms(&self, gguf_name: &str) -> &[LowRank] {
        self.terms.get(gguf_name).map_or(&[], Vec::as_slice)
    }

    /// Reorders the output rows of every term of the weights `pred` picks (see [`LowRank::permute_rows`]).
    pub fn permute_rows(&mut self, pred: impl Fn(&str) -> Option<Vec<usize>>) {
        for (name, terms) in &mut self.terms {
            if let Some(order) = pred(name) {
                for t in terms {
                    t.permute_rows(&order);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term() -> LowRank {
        LowRank {
            a: vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            b: vec![1.0, 0.5, -1.0, 2.0],
            rank: 2,
            rows: 2,
            cols: 3,
            scale: 0.5,
        }
    }

    #[test]
    fn the_merge_agrees_with_the_definition() {
        let t = term();
        let x = [1.0, -1.0, 2.0];
        // A x = [5, 11]; scale * B (A x) = 0.5 * [5 + 5.5, -5 + 22] = [5.25, 8.5]
        let mut w = vec![0.0; 6];
        t.merge_into(&mut w);
        let merged: Vec<f32> = w
            .chunks_exact(3)
            .map(|r| r.iter().zip(&x).map(|(a, b)| a * b).sum())
            .collect();
        assert_eq!(merged, vec![5.25, 8.5]);
    }

    #[test]
    fn rows_permute() {
        let mut t = term();
        t.permute_rows(&[1, 0]);
        assert_eq!(t.b, vec![-1.0, 2.0, 1.0, 0.5]);
    }
}
