//! With the `threads` feature, the CPU backend gives the same bits on any number of threads: the bundled
//! model (models/wisp-mini) prefills the start of a golden prompt (64 tokens, one pass) and decodes
//! greedily in rayon pools of 1 and 2 threads (a team of 2 for the prompt), and every logit is
//! bit-identical; so does the quantized fixture with a LoRA adapter. (A debug build runs
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
use wisp::backend::Rows;
use wisp::model::{ModelConfig, ModelWeights};

#[derive(Deserialize)]
struct Case {
    token_ids: Vec<u32>,
}

#[derive(Deserialize)]
struct Golden {
    cases: Vec<Case>,
}

/// The prompt's logits (every position) and then one row per greedy step, as bits, and the tokens.
fn run(
    threads: usize,
    (config, source): &(ModelConfig, ModelWeights),
    prompt: &[u32],
    steps: usize,
) -> (Vec<Vec<u32>>, Vec<u32>) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        assert_eq!(cpu::threads(), threads);
        let mut decoder = CpuDecoder::new(config, source, 640).unwrap();
        let bits = |row: &[f32]| row.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        let mut rows: Vec<Vec<u32>> = Vec::new();
        let logits = decoder.forward_rows(prompt, Rows::Every).unwrap();
        rows.extend(logits.iter().map(|r| bits(r)));
        let mut tokens = vec![argmax(logits.last().unwrap()) as u32];
        while tokens.len() < steps {
            let row = decoder
                .forward_rows(&tokens[tokens.len() - 1..], Rows::LastOfPrompt)
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
    let dir = root.join("models/wisp-mini");
    let weights = std::fs::read(dir.join("model.safetensors")).unwrap();
    let config = std::fs::read_to_string(dir.join("config.json")).unwrap();
    let model = ModelWeights::load(&weights, Some(&config)).unwrap();
    same_on_1_and_2_threads(&model, prompt, 8);
}

/// Both runs' bits and tokens agree.
fn same_on_1_and_2_threads(model: &(ModelConfig, ModelWeights), prompt: &[u32], steps: usize) {
    let (one, tokens) = run(1, model, prompt, steps);
    let (two, tokens_two) = run(2, model, prompt, steps);
    assert_eq!(tokens_two, tokens, "greedy tokens");
    assert_eq!(two.len(), one.len());
    for (i, (a, b)) in two.iter().zip(&one).enumerate() {
        assert!(a == b, "logits row {i} differs between 1 and 2 threads");
    }
}

/// The quantized fixture with a LoRA adapter of every projection and the head (low-rank terms added to
/// the quantized products, split into the same bands as they are): the same bits on 1 and 2 threads. The
/// 24-token prompt (~30M multiply-adds) is work enough for a team of 2 (parallel::team::MIN_PASS_WORK).
#[test]
fn lora_terms_are_bit_identical_on_any_number_of_threads() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/decoders");
    let weights = std::fs::read(dir.join("llama-quant.gguf")).unwrap();
    let adapter = std::fs::read(dir.join("llama-quant.lora.gguf")).unwrap();
    let (config, mut source) = ModelWeights::load(&weights, None).unwrap();
    source.set_adapters(&config, &[(adapter, 1.0)]).unwrap();
    let prompt: Vec<u32> = (0..24).map(|i| (i * 37 + 5) % 256).collect();
    same_on_1_and_2_threads(&(config, source), &prompt, 8);
}
