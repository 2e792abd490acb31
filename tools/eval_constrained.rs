//! The bundled model's held-out evaluation as the package runs it: each case of
//! `tools/train/out/eval.jsonl` (written by `tools/train/gen_data.py`) goes through our chat template,
//! tokenizer and CPU backend, greedy, with the agent's tool-call grammar (`tool_choice: "auto"`,
//! jump-forward on), and the generated text is written one JSON line per case, in order, for
//! `tools/train/evaluate.py --outputs` to score with the same metrics as the PyTorch run.
//!
//!     cargo run --release --example eval_constrained -- tools/train/out/eval.jsonl tools/train/out/constrained.jsonl

use std::cell::RefCell;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::time::Instant;

use serde::Deserialize;
use serde_json::{json, Value};
use wisp::agent::{ToolChoice, ToolSpec};
use wisp::assembly::{AssembledModel, GenerateRequest};
use wisp::generate::SamplingParams;
use wisp::text::Message;

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
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, input, output] = &args[..] else {
        return Err("usage: eval_constrained EVAL.jsonl OUT.jsonl".into());
    };
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/wisp-mini");
    let model = pollster::block_on(AssembledModel::load_bundle(&dir, "cpu"))?;
    let tokenizer = model.tokenizer()?;

    let started = Instant::now();
    let mut out = BufWriter::new(File::create(output)?);
    let mut n = 0;
    for line in BufReader::new(File::open(input)?).lines() {
        let case: Case = serde_json::from_str(&line?)?;
        let c = RefCell::new(model.conversation(None, None, usize::MAX)?);
        for tool in &case.tools {
            model.register_tool(&mut c.borrow_mut(), spec(tool))?;
        }
        c.borrow_mut().messages = case.messages;
        let request = GenerateRequest {
            sampling: SamplingParams {
                temperature: 0.0,
                ..SamplingParams::default()
            },
            max_tokens: MAX_NEW_TOKENS,
            stop: Vec::new(),
            draft_tokens: None,
            seed: 1,
            response_format: None,
        };
        let (mut turn, _) = pollster::block_on(model.start_turn(&c, request, &ToolChoice::Auto))?;
        let prompt_len = turn.generation().usage().prompt_tokens;
        let mut decoder = model.decoder.borrow_mut();
        while pollster::block_on(turn.step(&mut decoder, tokenizer, &mut c.borrow_mut()))?
            .finish
            .is_none()
        {}
        let generated = &decoder.tokens()[prompt_len..decoder.len()];
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
