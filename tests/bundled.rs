//! The bundled default model (models/wisp-mini) against PyTorch's outputs for the same F16 weights
//! (tools/train/golden.py): our chat template rendering, tokenizer, logits and greedy continuation, on
//! the CPU backend for every case and on wonnx (lavapipe) for the first.

#[path = "support/argmax.rs"]
mod argmax;
use argmax::argmax;

use std::path::PathBuf;

use serde::Deserialize;
use wisp::assembly::AssembledModel;
use wisp::generate::{GenerateOptions, Generation, SamplingParams};
use wisp::text::Message;

#[derive(Deserialize)]
struct Case {
    name: String,
    messages: Vec<Message>,
    tools: Option<serde_json::Value>,
    prompt: String,
    token_ids: Vec<u32>,
    last_logits: Vec<f32>,
    greedy_ids: Vec<u32>,
}

#[derive(Deserialize)]
struct Golden {
    cases: Vec<Case>,
}

#[test]
fn bundled_model_matches_pytorch() {
    check(false);
}

#[test]
fn bundled_model_matches_pytorch_on_wonnx() {
    check(true);
}

fn check(gpu: bool) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("models/wisp-mini");
    let golden: Golden = serde_json::from_slice(
        &std::fs::read(root.join("tests/fixtures/bundled/golden.json")).unwrap(),
    )
    .unwrap();
    let backend = if gpu { "webgpu" } else { "cpu" };
    let model = pollster::block_on(AssembledModel::load_bundle(&dir, backend)).unwrap();
    let (tokenizer, template) = (model.tokenizer().unwrap(), model.template().unwrap());
    let mut decoder = model.decoder.borrow_mut();
    let cases = if gpu {
        &golden.cases[..1]
    } else {
        &golden.cases[..]
    };

    for case in cases {
        let prompt = template
            .render(&case.messages, case.tools.as_ref(), true)
            .unwrap();
        assert_eq!(prompt, case.prompt, "{}: rendered prompt", case.name);
        assert_eq!(
            tokenizer.encode(&prompt).unwrap(),
            case.token_ids,
            "{}: token ids",
            case.name
        );
        decoder.seek(0).unwrap();
        let logits = pollster::block_on(decoder.forward(&case.token_ids)).unwrap();
        let last = logits.last().unwrap();
        let diff = last
            .iter()
            .zip(&case.last_logits)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max);
        assert!(diff <= 1e-4, "{}: max abs logit diff {diff}", case.name);
        let mut next = argmax(last) as u32;
        let mut greedy = vec![next];
        while greedy.len() < case.greedy_ids.len() {
            next = argmax(&pollster::block_on(decoder.forward(&[next])).unwrap()[0]) as u32;
            greedy.push(next);
        }
        assert_eq!(
            greedy, case.greedy_ids,
            "{}: greedy continuation",
            case.name
        );

        // The generation engine with prompt-lookup drafts: the same tokens, in fewer passes.
        let options = GenerateOptions {
            sampling: SamplingParams {
                temperature: 0.0,
                ..SamplingParams::default()
            },
            max_new_tokens: case.greedy_ids.len(),
            stop: Vec::new(),
            draft_len: None,
        };
        let (tokens, usage) = pollster::block_on(async {
            let mut g = Generation::start(&mut decoder, &case.token_ids, &[], options, 0)
                .await
                .unwrap();
            let mut tokens = Vec::new();
            loop {
                let step = g.step(&mut decoder, tokenizer).await.unwrap();
                tokens.push(step.token);
                if step.finish.is_some() {
                    return (tokens, g.usage());
                }
            }
        });
        assert_eq!(tokens, case.greedy_ids, "{}: speculative greedy", case.name);
        assert_eq!(
            decoder.len(),
            case.token_ids.len() + tokens.len() - 1,
            "{}: no draft left in the cache",
            case.name
        );
        println!(
            "{} ({}): {} tokens in {} passes, {} of {} drafts accepted",
            case.name,
            if gpu { "wonnx" } else { "cpu" },
            tokens.len(),
            usage.passes,
            usage.accepted_draft_tokens,
            usage.draft_tokens
        );
    }
}
