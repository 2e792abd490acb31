//! LoRA adapters (llama.cpp's GGUF format), loaded as pages load them (`AssembledModel` with `adapters`),
//! on the CPU backend (low-rank terms beside the weights) and the GPU backend (merged into f32 weights):
//! the f32 fixture Llama (safetensors and GGUF) plus a random adapter against llama.cpp's logits, the quantized fixture plus an
//! adapter of every projection and the head CPU against GPU (tools/make_lora_fixtures.py), and flawed
//! adapters refused with INVALID_ADAPTER naming the flaw.

#[path = "support/argmax.rs"]
mod argmax;

#[path = "support/decoder_reference.rs"]
mod decoder_reference;
use decoder_reference::{dir, reference};

use wisp::assembly::{AssembledModel, LoadOptions};

/// The quantized fixture (llama-quant.gguf) on `backend` with `adapters`.
fn load(backend: &str, adapters: Vec<(Vec<u8>, f32)>) -> wisp::Result<AssembledModel> {
    let base = std::fs::read(dir().join("llama-quant.gguf")).unwrap();
    load_bytes(&base, None, None, backend, adapters)
}

fn load_bytes(
    weights: &[u8],
    tokenizer: Option<&[u8]>,
    config: Option<String>,
    backend: &str,
    adapters: Vec<(Vec<u8>, f32)>,
) -> wisp::Result<AssembledModel> {
    pollster::block_on(AssembledModel::load(
        weights,
        tokenizer,
        LoadOptions {
            backend: Some(backend.into()),
            context_len: Some(64),
            config,
            adapters,
            ..LoadOptions::default()
        },
    ))
}

fn adapter() -> Vec<u8> {
    std::fs::read(dir().join("llama-quant.lora.gguf")).unwrap()
}

fn logits(model: &AssembledModel, tokens: &[u32]) -> Vec<Vec<f32>> {
    let mut dec = model.decoder.borrow_mut();
    dec.seek(0).unwrap();
    pollster::block_on(dec.forward(tokens)).unwrap()
}

/// The f32 Llama plus llama.lora.gguf against llama.cpp on the same weights and adapter, with the same
/// greedy tokens and within 2e-3 (logits spread ~3): llama.cpp multiplies f16 tensors with activations
/// rounded to f16, which moves the adapter's term by up to 7e-4 here (the weights are f32 on both sides;
/// our CPU and GPU agree with each other to 1e-6). The base is the safetensors file (Hugging Face's q/k
/// row order: the adapter's q/k rows are put in it) or, with `gguf`, llama.gguf, the very file llama.cpp
/// ran (its permuted rows, the adapter's taken as they are), as a GGUF model such as SmolLM2 loads.
fn matches_llama_cpp(backend: &str, gguf: bool) {
    let (weights, config) = if gguf {
        (std::fs::read(dir().join("llama.gguf")).unwrap(), None)
    } else {
        (
            std::fs::read(dir().join("llama.safetensors")).unwrap(),
            Some(std::fs::read_to_string(dir().join("llama.config.json")).unwrap()),
        )
    };
    // llama.gguf's vocabulary is there for llama.cpp (which loads no model without one, nor with an empty
    // merge list) and is not a valid BPE one; the test feeds ids, so any tokenizer does.
    let tokenizer = std::fs::read(dir().join("bytes.tokenizer.json")).unwrap();
    let adapter = std::fs::read(dir().join("llama.lora.gguf")).unwrap();
    let model = load_bytes(
        &weights,
        Some(&tokenizer),
        config.clone(),
        backend,
        vec![(adapter, 1.0)],
    )
    .expect("the model loads with the adapter");
    let reference = reference("llama-lora");
    for case in &reference.cases {
        for (i, row) in logits(&model, &case.tokens).iter().enumerate() {
            let diff = row
                .iter()
                .zip(&case.logits[i])
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            assert!(diff <= 2e-3, "{backend}: position {i} max abs diff {diff}");
            assert_eq!(
                argmax::argmax(row),
                case.argmax[i],
                "{backend}: greedy token at {i}"
            );
        }
    }
    // The adapter is what brings the logits there: the base alone is far off.
    let base = load_bytes(&weights, Some(&tokenizer), config, backend, Vec::new()).unwrap();
    let case = &reference.cases[0];
    let off = logits(&base, &case.tokens)
        .iter()
        .zip(&case.logits)
        .flat_map(|(a, b)| a.iter().zip(b).map(|(x, y)| (x - y).abs()))
        .fold(0.0f32, f32::max);
    assert!(
        off > 0.5,
        "{backend}: the base alone is within {off} of the adapted reference"
    );
}

#[test]
fn cpu_logits_with_an_adapter_match_llama_cpp() {
    matches_llama_cpp("cpu", false);
}

#[test]
fn cpu_logits_with_an_adapter_over_a_gguf_base_match_llama_cpp() {
    matches_llama_cpp("cpu", true);
}

#[test]
fn gpu_logits_with_an_adapter_match_llama_cpp() {
    matches_llama_cpp("webgpu", false);
}

#[test]
fn gpu_logits_with_an_adapter_over_a_gguf_base_match_llama_cpp() {
    matches_llama_cpp("webgpu", true);
}

/// Quantized weights with low-rank terms on the CPU against the GPU's f32 weights with the adapter merged:
/// two independent paths, within the quantized fixture's tolerance (1% of a row's spread; the CPU rounds
/// activations to i16 per block), while the adapter moves the logits by about a whole spread.
#[test]
fn quantized_cpu_terms_agree_with_the_merged_gpu_weights() {
    let tokens = &reference("llama-quant").cases[0].tokens;
    let cpu = logits(&load("cpu", vec![(adapter(), 1.0)]).unwrap(), tokens);
    let gpu = logits(&load("webgpu", vec![(adapter(), 1.0)]).unwrap(), tokens);
    let base = logits(&load("cpu", Vec::new()).unwrap(), tokens);
    for (i, ((c, g), b)) in cpu.iter().zip(&gpu).zip(&base).enumerate() {
        let (lo, hi) = g
            .iter()
            .fold((f32::MAX, f32::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        let diff = |x: &[f32]| {
            x.iter()
                .zip(g)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f32::max)
        };
        assert!(
            diff(c) <= 0.01 * (hi - lo),
            "position {i}: {} of {}",
            diff(c),
            hi - lo
        );
        assert!(
            diff(b) > 0.2 * (hi - lo),
            "position {i}: the adapter barely moves the logits"
        );
    }
}

/// The low-rank terms keep the CPU backend's promise: a pass of several tokens gives the bits of
/// one-token steps. Scale 0 gives the base model's bits; the same adapter twice at half scale gives the
/// logits of one at full scale, within float error.
#[test]
fn cpu_terms_are_stepwise_exact_and_scale() {
    let reference = reference("llama-quant");
    let case = &reference.cases[0];
    let model = load("cpu", vec![(adapter(), 1.0)]).unwrap();
    let prefill = logits(&model, &case.tokens);
    let mut dec = model.decoder.borrow_mut();
    dec.seek(0).unwrap();
    for (i, &t) in case.tokens.iter().enumerate() {
        let step = pollster::block_on(dec.forward(&[t])).unwrap();
        assert_eq!(step[0], prefill[i], "position {i}");
    }
    drop(dec);
    let zero = load("cpu", vec![(adapter(), 0.0)]).unwrap();
    let base = load("cpu", Vec::new()).unwrap();
    assert_eq!(logits(&zero, &case.tokens), logits(&base, &case.tokens));
    let halves = load("cpu", vec![(adapter(), 0.5), (adapter(), 0.5)]).unwrap();
    for (a, b) in logits(&halves, &case.tokens).iter().zip(&prefill) {
        let d = a
            .iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max);
        assert!(d < 1e-3, "two halves differ from one whole by {d}");
    }
}

#[test]
fn flawed_adapters_are_refused_by_name() {
    for (file, words) in [
        ("other-arch", "architecture 'qwen2'"),
        (
            "missing-half",
            "'blk.0.attn_q.weight' has a lora_a but no lora_b",
        ),
        ("wrong-shape", "'blk.0.attn_k.weight'"),
        (
            "no-such-weight",
            "'blk.9.attn_q.weight.lora_a' names no weight",
        ),
        ("bad-alpha", "adapter.lora.alpha is -1"),
        ("ranks-differ", "ranks differ"),
    ] {
        let bytes = std::fs::read(dir().join(format!("bad-adapters/{file}.gguf"))).unwrap();
        let e = load("cpu", vec![(bytes, 1.0)])
            .err()
            .unwrap_or_else(|| panic!("{file} loaded"));
        assert_eq!(e.code(), "INVALID_ADAPTER", "{file}: {e}");
        assert!(e.to_string().contains(words), "{file}: {e}");
    }
    let base = std::fs::read(dir().join("llama-quant.gguf")).unwrap();
    for (bytes, words) in [
        (base, "not a LoRA adapter"),
        (b"GGUF\x03".to_vec(), "invalid weights file"),
        (b"PK\x03\x04".to_vec(), "no 'GGUF' magic"),
    ] {
        let e = load("cpu", vec![(bytes, 1.0)]).err().expect("refused");
        assert_eq!(e.code(), "INVALID_ADAPTER", "{e}");
        assert!(e.to_string().contains(words), "{e}");
    }
    let e = load("cpu", vec![(adapter(), f32::NAN)])
        .err()
        .expect("refused");
    assert_eq!(e.code(), "INVALID_ADAPTER", "{e}");
}
