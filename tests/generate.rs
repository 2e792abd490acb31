//! Generation on the tiny Llama fixture (wonnx on lavapipe): greedy output equals onnxruntime's greedy
//! continuation, seeded sampling is reproducible, stop conditions end it, prefix reuse skips cached tokens.

use std::path::PathBuf;

use serde::Deserialize;
use wisp::assembly::{AssembledModel, LoadOptions};
use wisp::backend::Decoder;
use wisp::generate::{FinishReason, GenerateOptions, Generation, SamplingParams};
use wisp::text::Tokenizer;

#[derive(Deserialize)]
struct Case {
    tokens: Vec<u32>,
    greedy_from_6: Vec<u32>,
}

#[derive(Deserialize)]
struct Reference {
    cases: Vec<Case>,
}

/// The tiny Llama fixture as `Model.load` assembles it on `backend`: its decoder and tokenizer.
fn assembled(backend: &str) -> (Decoder, Tokenizer) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/decoders");
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
    let options = LoadOptions {
        config: Some(String::from_utf8(read("llama.config.json")).unwrap()),
        backend: Some(backend.into()),
        chunk_len: Some(4),
        context_len: Some(32),
        ..LoadOptions::default()
    };
    let model = pollster::block_on(AssembledModel::load(
        &read("llama.safetensors"),
        Some(&read("bytes.tokenizer.json")),
        options,
    ))
    .unwrap();
    (model.decoder.into_inner(), model.tokenizer.unwrap())
}

/// The fixture on wonnx, and onnxruntime's reference.
fn setup() -> (Decoder, Tokenizer, Reference) {
    let (decoder, tokenizer) = assembled("webgpu");
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/decoders/llama.json");
    let reference = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    (decoder, tokenizer, reference)
}

fn options(sampling: SamplingParams, max_new_tokens: usize, stop: &[&str]) -> GenerateOptions {
    GenerateOptions {
        sampling,
        max_new_tokens,
        stop: stop.iter().map(|s| s.to_string()).collect(),
        draft_len: None,
    }
}

fn greedy() -> SamplingParams {
    SamplingParams {
        temperature: 0.0,
        ..SamplingParams::default()
    }
}

/// Runs a generation to its end: (tokens, text, finish reason, usage).
fn run(
    decoder: &mut Decoder,
    tokenizer: &Tokenizer,
    prompt: &[u32],
    eos: &[u32],
    opts: GenerateOptions,
) -> (Vec<u32>, String, FinishReason, wisp::generate::Usage) {
    pollster::block_on(async {
        let mut g = Generation::start(decoder, prompt, eos, opts, 7)
            .await
            .unwrap();
        let (mut tokens, mut text) = (Vec::new(), String::new());
        loop {
            let step = g.step(decoder, tokenizer).await.unwrap();
            tokens.push(step.token);
            text.push_str(&step.text);
            if let Some(reason) = step.finish {
                return (tokens, text, reason, g.usage());
            }
        }
    })
}

#[test]
fn greedy_generation_equals_the_reference_and_stops_as_asked() {
    let (mut dec, tok, reference) = setup();
    let case = &reference.cases[0];
    let prompt = &case.tokens[..6];
    let want = &case.greedy_from_6;

    let (tokens, text, reason, usage) = run(
        &mut dec,
        &tok,
        prompt,
        &[],
        options(greedy(), want.len(), &[]),
    );
    assert_eq!(&tokens, want);
    assert_eq!(text, tok.decode(want).unwrap());
    assert_eq!(reason, FinishReason::Length);
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.cached_tokens,
            usage.completion_tokens
        ),
        (6, 0, want.len())
    );

    // The same prompt again reuses the cache: only its last token runs.
    let (tokens, _, _, usage) = run(&mut dec, &tok, prompt, &[], options(greedy(), 3, &[]));
    assert_eq!(tokens, want[..3]);
    assert_eq!(usage.cached_tokens, 5);

    // An end-of-sequence token ends it, and its text is not shown.
    let eos = want[4];
    let first = want.iter().position(|&t| t == eos).unwrap();
    let (tokens, text, reason, _) = run(&mut dec, &tok, prompt, &[eos], options(greedy(), 10, &[]));
    assert_eq!(
        (tokens.as_slice(), reason),
        (&want[..=first], FinishReason::EosToken)
    );
    assert_eq!(text, tok.decode(&want[..first]).unwrap());

    // A stop string (two characters of the answer; the random tiny model also writes invalid UTF-8, shown
    // as U+FFFD, which is left out) ends it; neither it nor what follows is shown.
    let full = tok.decode(want).unwrap();
    let chars: Vec<char> = full.chars().collect();
    let pair = chars.windows(2).find(|w| !w.contains(&'\u{FFFD}')).unwrap();
    let stop: String = pair.iter().collect();
    let (_, text, reason, _) = run(&mut dec, &tok, prompt, &[], options(greedy(), 10, &[&stop]));
    assert_eq!(
        reason,
        FinishReason::Stop,
        "stop string {stop:?} in {full:?}"
    );
    assert_eq!(text, full[..full.find(&stop).unwrap()]);
}

#[test]
fn drafts_change_the_number_of_passes_not_the_tokens() {
    let (gpu, tok, reference) = setup();
    for (name, mut dec) in [("wonnx", gpu), ("cpu", assembled("cpu").0)] {
        let mut accepted = 0;
        for case in &reference.cases {
            // Repeated text gives prompt lookup something to copy.
            let prompt: Vec<u32> = case.tokens[..4].repeat(3);
            for sampling in [
                greedy(),
                SamplingParams {
                    temperature: 1.0,
                    top_k: 5,
                    repetition_penalty: 1.1,
                    seed: Some(9),
                    ..SamplingParams::default()
                },
            ] {
                let mut with = |draft_len| {
                    let mut opts = options(sampling.clone(), 14, &[]);
                    opts.draft_len = draft_len;
                    dec.seek(0).unwrap();
                    let out = run(&mut dec, &tok, &prompt, &[], opts);
                    assert_eq!(
                        dec.len(),
                        prompt.len() + out.0.len() - 1,
                        "{name}: drafts left"
                    );
                    out
                };
                let plain = with(Some(0));
                assert_eq!((plain.3.draft_tokens, plain.3.passes), (0, 14), "{name}");
                for draft_len in [None, Some(1), Some(5)] {
                    let drafted = with(draft_len);
                    assert_eq!(
                        drafted.0, plain.0,
                        "{name}: {draft_len:?} drafts, {sampling:?}"
                    );
                    assert_eq!(drafted.1, plain.1);
                    let u = drafted.3;
                    assert_eq!(u.passes, 14 - u.accepted_draft_tokens, "{name}");
                    accepted += u.accepted_draft_tokens;
                }
            }
        }
        assert!(accepted > 0, "{name}: no draft was ever accepted");
    }
}

#[test]
fn seeded_sampling_is_reproducible() {
    let (mut dec, tok, reference) = setup();
    let prompt = &reference.cases[1].tokens[..6];
    let sampled = |dec: &mut Decoder, seed| {
        let params = SamplingParams {
            temperature: 1.5,
            seed: Some(seed),
            ..SamplingParams::default()
        };
        run(dec, &tok, prompt, &[], options(params, 12, &[])).0
    };
    let a = sampled(&mut dec, 42);
    let b = sampled(&mut dec, 42);
    let c = sampled(&mut dec, 43);
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn bad_requests_are_refused_up_front_and_a_full_context_ends_the_answer() {
    let (mut dec, tok, reference) = setup();
    let case = &reference.cases[0];
    let start = |dec: &mut Decoder, prompt: &[u32], opts| {
        pollster::block_on(Generation::start(dec, prompt, &[], opts, 1))
            .err()
            .map(|e| e.code())
    };
    assert_eq!(
        start(&mut dec, &[], options(greedy(), 4, &[])),
        Some("INVALID_REQUEST")
    );
    let hot = SamplingParams {
        temperature: -1.0,
        ..SamplingParams::default()
    };
    assert_eq!(
        start(&mut dec, &case.tokens[..4], options(hot, 4, &[])),
        Some("INVALID_REQUEST")
    );
    assert_eq!(
        start(&mut dec, &case.tokens[..4], options(greedy(), 0, &[])),
        Some("INVALID_REQUEST")
    );
    let long: Vec<u32> = case.tokens.iter().chain(&case.tokens).copied().collect();
    assert_eq!(
        start(&mut dec, &long, options(greedy(), 4, &[])),
        Some("CONTEXT_OVERFLOW")
    );

    // 28 prompt tokens in a 32-token context leave room for 4 answer tokens, however many were asked.
    let prompt: Vec<u32> = case
        .tokens
        .iter()
        .chain(&case.tokens[..8])
        .copied()
        .collect();
    let (tokens, _, reason, _) = run(&mut dec, &tok, &prompt, &[], options(greedy(), 100, &[]));
    assert_eq!((tokens.len(), reason), (4, FinishReason::Length));
    assert_eq!(dec.len(), 31);
}
