//! SmolLM2-135M-Instruct's reference (tools/make_smollm2_reference.py): prompts, token ids, top logits
//! and greedy answers, for the opt-in SmolLM2 tests of both backends.
#![allow(dead_code)]

use serde::Deserialize;

#[derive(Deserialize)]
pub struct Case {
    pub messages: Vec<Msg>,
    pub text: String,
    pub ids: Vec<u32>,
    pub top_ids: Vec<usize>,
    pub top_logits: Vec<f32>,
    pub greedy_ids: Vec<u32>,
    pub greedy_text: String,
}

#[derive(Deserialize)]
pub struct Msg {
    pub role: String,
    pub content: String,
}

#[derive(Deserialize)]
pub struct Reference {
    pub cases: Vec<Case>,
}

/// tests/fixtures/smollm2/reference.json: the PyPI Q4_1 file's.
pub fn reference() -> Reference {
    reference_of("reference.json")
}

/// A reference in tests/fixtures/smollm2/ by file name.
pub fn reference_of(name: &str) -> Reference {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/smollm2")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}
