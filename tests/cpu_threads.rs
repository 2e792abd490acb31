//! With the `threads` feature, the CPU backend gives the same bits on any number of threads: the bundled
//! model (models/wisp-mini) prefills the start of a golden prompt (64 tokens, one pass) and decodes
//! greedily in rayon pools of 1 and 2 threads (a team of 2 for the prompt), and every logit is
//! bit-identical. (A debug build runs
//! this model at a few tokens a second, hence the short prompt; tests/bundled.rs checks the CPU
//! backend's tokens against PyTorch's.)
//!     cargo test --features threads --test cpu_threads
#![cfg(feature = "threads")]

#[path = "support/argmax.rs"]
mod argmax;
use argmax::argmax;

use std::path::PathBuf;

use serde::Deserialize;
use wisp::backend::cpu::{self, CpuDecoder};
use wisp::model::ModelWeights;

#[derive(Deserialize)]
struct Case {
    token_ids: Vec<u32>,
}

#[derive(Deserialize)]
struct Golden {
    cases: Vec<Case>,
}

/// The prompt's logits (every position) and then one row per greedy step, as bits, and the tokens.
fn run(threads: usize, prompt: &[u32], steps: usize) -> (Vec<Vec<u32>>, Vec<u32>) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("models/wisp-mini");
    let weights = std::fs::read(dir.join("model.safetensors")).unwrap();
    let config = std::fs::read_to_string(dir.join("config.json")).unwrap();
    let (config, source) = ModelWeights::load(&weights, Some(&config)).unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        assert_eq!(cpu::threads(), threads);
        let mut decoder = CpuDecoder::new(&config, &source, 640).unwrap();
        let bits = |row: &[f32]| row.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        let mut rows: Vec<Vec<u32>> = Vec::new();
        let logits = decoder.forward_rows(prompt, false).unwrap();
        rows.extend(logits.iter().map(|r| bits(r)));
        let mut tokens = vec![argmax(logits.last().unwrap()) as u32];
        while tokens.len() < steps {
            let row = decoder
                .forward_rows(&tokens[tokens.len() - 1..], true)
                .unwrap()
                .remove(0);
            rows.push(bits(&row));
            tokens.push(argmax(&row) as u32);
        }
        (rows, tokens)
    })
}

#[test]
fn bundled_model_is_bit_identical_on_any_number_of_threads() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let golden: Golden = serde_json::from_slice(
        &std::fs::read(root.join("tests/fixtures/bundled/golden.json")).unwrap(),
    )
    .unwrap();
    let prompt = &golden.cases[0].token_ids[..64];
    let (one, tokens) = run(1, prompt, 8);
    let (two, tokens_two) = run(2, prompt, 8);
    assert_eq!(tokens_two, tokens, "greedy tokens");
    assert_eq!(two.len(), one.len());
    for (i, (a, b)) in two.iter().zip(&one).enumerate() {
        assert!(a == b, "logits row {i} differs between 1 and 2 threads");
    }
}
