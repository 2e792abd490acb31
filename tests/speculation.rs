//! Prompt-lookup speculation on agent-like transcripts, where the answer quotes a tool result: the same
//! tokens with and without drafts (asserted), and, printed for the notes, the accepted-draft rate, the
//! passes saved, the speed-up and where a token's time goes. Opt-in, in release mode:
//!     cargo test --release --test speculation -- --ignored --nocapture
//! (the SmolLM2 case needs `bash tools/fetch-smollm2.sh`).

use std::path::PathBuf;
use std::time::Instant;

use wisp::assembly::{AssembledModel, LoadOptions};
use wisp::backend::{BackendKind, Decoder};
use wisp::generate::{GenerateOptions, Generation, SamplingParams, Usage};
use wisp::text::{Message, Tokenizer};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const WEATHER: &str = r#"{"city": "Reykjavik", "temperature_c": -3.5, "conditions": "light snow", "wind_kmh": 31, "humidity": 87}"#;

/// Greedy generation of up to `max` tokens: (tokens, usage, seconds).
fn generate(
    decoder: &mut Decoder,
    tokenizer: &Tokenizer,
    prompt: &[u32],
    eos: &[u32],
    max: usize,
    draft_len: Option<usize>,
) -> (Vec<u32>, Usage, f64) {
    decoder.seek(0).unwrap();
    let options = GenerateOptions {
        sampling: SamplingParams {
            temperature: 0.0,
            ..SamplingParams::default()
        },
        max_new_tokens: max,
        stop: Vec::new(),
        draft_len,
    };
    pollster::block_on(async {
        let mut g = Generation::start(decoder, prompt, eos, options, 0)
            .await
            .unwrap();
        // Timed from the first step: the prefill is the same work either way.
        let started = Instant::now();
        let mut tokens = Vec::new();
        loop {
            let step = g.step(decoder, tokenizer).await.unwrap();
            tokens.push(step.token);
            if step.finish.is_some() {
                return (tokens, g.usage(), started.elapsed().as_secs_f64());
            }
        }
    })
}

/// Drafts per pass: the backend's default, or 7 on the CPU, where drafting is off unless asked for.
fn compare(name: &str, decoder: &mut Decoder, tokenizer: &Tokenizer, prompt: &[u32], eos: &[u32]) {
    let max = 96;
    let drafts = match decoder.kind() {
        BackendKind::Cpu => Some(7),
        BackendKind::Webgpu => None,
    };
    let (plain, _, plain_s) = generate(decoder, tokenizer, prompt, eos, max, Some(0));
    decoder.profile_mut().reset();
    let (drafted, usage, drafted_s) = generate(decoder, tokenizer, prompt, eos, max, drafts);
    assert_eq!(drafted, plain, "{name}: drafts changed the output");
    let n = drafted.len();
    println!(
        "{name}: {n} tokens; plain {:.2} ms/token, with drafts {:.2} ms/token ({:.2}x); {} passes \
         instead of {}; drafts accepted {} of {} ({:.0}%)",
        plain_s * 1e3 / n as f64,
        drafted_s * 1e3 / n as f64,
        plain_s / drafted_s,
        usage.passes,
        n,
        usage.accepted_draft_tokens,
        usage.draft_tokens,
        100.0 * usage.accepted_draft_tokens as f64 / usage.draft_tokens.max(1) as f64
    );
    let profile = decoder.profile_mut().clone();
    let total: f64 = profile.stages.values().map(|s| s.ms).sum();
    let mut stages: Vec<_> = profile.stages.iter().collect();
    stages.sort_by(|a, b| b.1.ms.total_cmp(&a.1.ms));
    for (stage, s) in stages {
        println!(
            "    {stage:<16} {:>8.3} ms per sampled token ({:>4.1}%), {} calls",
            s.ms / profile.tokens_sampled as f64,
            100.0 * s.ms / total,
            s.calls
        );
    }
    println!(
        "    (generation only: {} tokens run through the model for {} sampled)",
        profile.tokens_run, profile.tokens_sampled
    );
    println!("    answer: {:?}", tokenizer.decode(&drafted).unwrap());
}

#[test]
#[ignore = "a measurement: run in release mode with --nocapture"]
fn bundled_model_agent_transcript() {
    let dir = root().join("models/wisp-mini");
    let cpu = pollster::block_on(AssembledModel::load_bundle(&dir, "cpu")).unwrap();
    let gpu = pollster::block_on(AssembledModel::load_bundle(&dir, "webgpu")).unwrap();
    let (tokenizer, template) = (cpu.tokenizer().unwrap(), cpu.template().unwrap());
    let tools: serde_json::Value = serde_json::json!([{
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
        }
    }]);
    let messages: Vec<Message> = serde_json::from_value(serde_json::json!([
        {"role": "user", "content": "What's the weather in Reykjavik?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Reykjavik\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": WEATHER}
    ]))
    .unwrap();
    let prompt = tokenizer
        .encode(&template.render(&messages, Some(&tools), true).unwrap())
        .unwrap();
    compare(
        "wisp-mini, cpu",
        &mut cpu.decoder.borrow_mut(),
        tokenizer,
        &prompt,
        &[2],
    );
    compare(
        "wisp-mini, wonnx",
        &mut gpu.decoder.borrow_mut(),
        tokenizer,
        &prompt,
        &[2],
    );
}

#[test]
#[ignore = "a measurement: needs tools/fetch-smollm2.sh; run in release mode with --nocapture"]
fn smollm2_quoting_a_tool_result() {
    let bytes = std::fs::read(root().join("models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))
        .expect("run tools/fetch-smollm2.sh first");
    let options = LoadOptions {
        backend: Some("cpu".into()),
        context_len: Some(512),
        ..LoadOptions::default()
    };
    let model = pollster::block_on(AssembledModel::load(&bytes, None, options)).unwrap();
    let (tokenizer, template) = (model.tokenizer().unwrap(), model.template().unwrap());
    let question = format!(
        "A weather tool returned this JSON:\n{WEATHER}\nRepeat the JSON exactly, then say in one \
         sentence what the weather in Reykjavik is."
    );
    let text = template
        .render(&[Message::new("user", &question)], None, true)
        .unwrap();
    let prompt = tokenizer.encode(&text).unwrap();
    let eos = [tokenizer.encode("<|im_end|>").unwrap()[0]];
    compare(
        "SmolLM2-135M Q4_1, cpu",
        &mut model.decoder.borrow_mut(),
        tokenizer,
        &prompt,
        &eos,
    );
}
