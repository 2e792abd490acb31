//! onnxruntime's logits for the tiny decoder fixtures (tools/make_decoder_fixtures.py,
//! tools/make_quant_fixtures.py), and the check the GPU and CPU decoder tests hold f32 rows to.
//! Include with `argmax` beside it (`#[path = "support/argmax.rs"] mod argmax;`).
#![allow(dead_code)]

use std::path::PathBuf;

use serde::Deserialize;

use crate::argmax::argmax;

#[derive(Deserialize)]
pub struct Case {
    pub tokens: Vec<u32>,
    pub logits: Vec<Vec<f32>>,
    pub argmax: Vec<usize>,
}

#[derive(Deserialize)]
pub struct Reference {
    pub cases: Vec<Case>,
}

/// tests/fixtures/decoders/.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/decoders")
}

/// The reference of fixture `name` (`llama`, `qwen2`, `qwen3`, `llama-quant`).
pub fn reference(name: &str) -> Reference {
    serde_json::from_str(&std::fs::read_to_string(dir().join(format!("{name}.json"))).unwrap())
        .unwrap()
}

/// Rows of f32 logits against the reference's from position `from`: within 1e-4, with the same greedy
/// token.
pub fn assert_close(got: &[Vec<f32>], case: &Case, from: usize, what: &str) {
    for (i, row) in got.iter().enumerate() {
        let want = &case.logits[from + i];
        assert_eq!(row.len(), want.len());
        let diff = row
            .iter()
            .zip(want)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(
            diff <= 1e-4,
            "{what}: position {} max abs diff {diff}",
            from + i
        );
        assert_eq!(
            argmax(row),
            case.argmax[from + i],
            "{what}: greedy token at position {}",
            from + i
        );
    }
}
