//! The bundled model's held-out evaluation as the package runs it: each case of
//! `tools/train/out/eval.jsonl` (written by `tools/train/gen_data.py`) goes through our chat template,
//! tokenizer and CPU backend, greedy, with the agent's tool-call grammar (`tool_choice: "auto"`,
//! jump-forward on), and the generated text is written one JSON line per case, in order, for
//! `tools/train/evaluate.py --outputs` to score with the same metrics as the PyTorch run.
//!
//!     cargo run --release --example eval_constrained -- tools/train/out/eval.jsonl tools/train/out/constrained.jsonl

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::time::Instant;

use serde::Deserialize;
use serde_json::{json, Value};
use wisp::agent::{tool_constraint, Conversation, ToolCallFormat, ToolChoice, ToolSpec, Turn};
use wisp::generate::{Decoder, GenerateOptions, Generation, SamplingParams};
use wisp::grammar::GrammarEnv;
use wisp::model::ModelWeights;
use wisp::text::{ChatTemplate, Message, Tokenizer};

/// Tokens an answer may take, as in `evaluate.py`.
const MAX_NEW_TOKENS: usize = 160;

#[derive(Deserialize)]
struct Case {
    messages: Vec<Message>,
    tools: Vec<Value>,
}

fn spec(tool: &Value) -> ToolSpec {
    let f = tool.get("function").unwrap_or(tool);
    ToolSpec {
        name: f["name"].as_str().unwrap_or_default().to_string(),
        description: f["description"].as_str().unwrap_or_default().to_string(),
        parameters: f
            .get("parameters")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
        timeout_ms: None,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, input, output] = &args[..] else {
        return Err("usage: eval_constrained EVAL.jsonl OUT.jsonl".into());
    };
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/wisp-mini");
    let weights = std::fs::read(dir.join("model.safetensors"))?;
    let config = std::fs::read_to_string(dir.join("config.json"))?;
    let (config, source) = ModelWeights::load(&weights, Some(&config))?;
    let tokenizer = Tokenizer::from_json(&std::fs::read(dir.join("tokenizer.json"))?)?;
    let template = ChatTemplate::new(&std::fs::read_to_string(dir.join("chat_template.jinja"))?)?;
    let eos: Vec<u32> = ["<|im_end|>", "<|endoftext|>"]
        .iter()
        .filter_map(|t| tokenizer.token_id(t))
        .collect();
    let env = GrammarEnv::new(&tokenizer, config.vocab_size, &eos)?;
    let mut decoder = Decoder::cpu(&config, &source, 1024)?;

    let started = Instant::now();
    let mut out = BufWriter::new(File::create(output)?);
    let mut n = 0;
    for line in BufReader::new(File::open(input)?).lines() {
        let case: Case = serde_json::from_str(&line?)?;
        let mut c = Conversation::new(None, ToolCallFormat::Hermes, 4000);
        for tool in &case.tools {
            c.tools.register(spec(tool))?;
        }
        c.messages = case.messages;
        let ids = tokenizer.encode(&c.prompt(&template)?)?;
        let options = GenerateOptions {
            sampling: SamplingParams {
                temperature: 0.0,
                ..SamplingParams::default()
            },
            max_new_tokens: MAX_NEW_TOKENS,
            stop: Vec::new(),
            draft_len: None,
        };
        let mut generation =
            pollster::block_on(Generation::start(&mut decoder, &ids, &eos, options, 1))?;
        generation.add_processor(Box::new(tool_constraint(
            &env,
            &c.tools,
            ToolCallFormat::Hermes,
            &ToolChoice::Auto,
            None,
            true,
        )?));
        let mut turn = Turn::new(generation, &c);
        while pollster::block_on(turn.step(&mut decoder, &tokenizer, &mut c))?
            .finish
            .is_none()
        {}
        let generated = &decoder.tokens()[ids.len()..decoder.len()];
        writeln!(out, "{}", json!({"output": tokenizer.decode(generated)?}))?;
        n += 1;
    }
    out.flush()?;
    eprintln!(
        "{n} cases in {:.0} s -> {output}",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
