//! Constrained decoding (src/grammar/, src/agent/grammar.rs) on the CPU backend: with the tiny random-weight
//! fixture (which writes garbage on its own) and with the bundled model, every call that a constrained
//! message makes parses and satisfies its tool's schema, whatever the seed, prompt and tool set;
//! `tool_choice` behaves; jump-forward gives the same tokens as masking alone; unusable schemas are coded
//! errors. And `response_format`: every answer is JSON valid for its schema (checked by `jsonschema`, not
//! by the grammar), alone or as the alternative to tool calls.

use std::cell::RefCell;
use std::path::PathBuf;
use std::time::Instant;

use serde_json::{json, Value};
use wisp::agent::{
    tool_constraint, Conversation, ToolCallFormat, ToolChoice, ToolSpec, Turn, TurnEvent,
};
use wisp::assembly::{AssembledModel, GenerateRequest, LoadOptions};
use wisp::generate::{FinishReason, LogitsProcessor, SamplingParams};
use wisp::grammar::{response_constraint, GrammarEnv, ResponseFormat};
use wisp::text::Tokenizer;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Models as `Model.load` puts them together (src/assembly/).
type Model = AssembledModel;

fn bundled() -> Model {
    pollster::block_on(AssembledModel::load_bundle(
        &root().join("models/wisp-mini"),
        "cpu",
    ))
    .unwrap()
}

/// The tiny Llama fixture: random weights, a byte-level vocabulary of 256 tokens and no end token of its
/// own, so the token of byte 0 plays that part (a stop string that is one token).
fn tiny() -> Model {
    let dir = root().join("tests/fixtures/decoders");
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
    let options = LoadOptions {
        config: Some(String::from_utf8(read("llama.config.json")).unwrap()),
        backend: Some("cpu".into()),
        context_len: Some(1024),
        stop: vec!["Ā".into()],
        ..LoadOptions::default()
    };
    pollster::block_on(AssembledModel::load(
        &read("llama.safetensors"),
        Some(&read("bytes.tokenizer.json")),
        options,
    ))
    .unwrap()
}

fn request(
    sampling: SamplingParams,
    max_tokens: usize,
    response_format: Option<ResponseFormat>,
) -> GenerateRequest {
    GenerateRequest {
        sampling,
        max_tokens,
        stop: Vec::new(),
        draft_tokens: None,
        seed: 1,
        response_format,
    }
}

fn tool(name: &str, parameters: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("the {name} tool"),
        parameters,
    }
}

/// Tool sets with enums, numbers with bounds, required and optional fields, nested objects and arrays.
/// Strings are bounded so that a random model (which rarely closes a string) ends within the budget.
fn tool_sets() -> Vec<Vec<ToolSpec>> {
    vec![
        vec![
            tool(
                "get_weather",
                json!({"type": "object", "properties": {
                    "city": {"type": "string", "maxLength": 12},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                    "required": ["city"], "additionalProperties": false}),
            ),
            tool(
                "get_time",
                json!({"type": "object", "properties": {"timezone": {"type": "string", "maxLength": 8}},
                       "required": ["timezone"], "additionalProperties": false}),
            ),
        ],
        vec![tool(
            "set_alarm",
            json!({"type": "object", "properties": {
                "hour": {"type": "integer", "minimum": 0, "maximum": 23},
                "minute": {"type": "integer", "minimum": 0, "maximum": 59},
                "volume": {"type": "number", "minimum": 0, "maximum": 1},
                "repeat": {"type": "boolean"}},
                "required": ["hour", "minute"], "additionalProperties": false}),
        )],
        vec![
            tool(
                "book_trip",
                json!({"type": "object", "properties": {
                    "from": {"type": "object", "properties": {
                        "lat": {"type": "number"}, "lon": {"type": "number"}},
                        "required": ["lat", "lon"], "additionalProperties": false},
                    "class": {"enum": ["economy", "business", 1]},
                    "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 3}},
                    "required": ["from", "class"], "additionalProperties": false}),
            ),
            tool(
                "now",
                json!({"type": "object", "properties": {}, "additionalProperties": false}),
            ),
        ],
    ]
}

const PROMPTS: &[&str] = &[
    "What's the weather in Paris?",
    "Wake me up at 7:30 tomorrow.",
    "Book me a business trip from 48.8, 2.3.",
    "What time is it in Tokyo?",
    "hello",
];

fn conversation(tools: &[ToolSpec], format: ToolCallFormat, prompt: &str) -> Conversation {
    let mut c = Conversation::new(None, format, 4000);
    for spec in tools {
        c.tools.register(spec.clone()).unwrap();
    }
    c.push_user(prompt);
    c
}

fn prompt_ids(model: &Model, c: &Conversation) -> Vec<u32> {
    match &model.template {
        Some(template) => model
            .tokenizer()
            .unwrap()
            .encode(&c.prompt(template).unwrap())
            .unwrap(),
        None => {
            let text = format!(
                "{}\n",
                c.messages.last().unwrap().content.as_deref().unwrap()
            );
            model.tokenizer().unwrap().encode(&text).unwrap()
        }
    }
}

#[derive(Default, Debug)]
struct Outcome {
    events: Vec<TurnEvent>,
    tokens: Vec<u32>,
    forced: usize,
    completion: usize,
    constrained_ms: f64,
    finish: Option<wisp::generate::FinishReason>,
}

impl Outcome {
    fn valid(&self) -> usize {
        self.events
            .iter()
            .filter(|e| matches!(e, TurnEvent::ToolCall { .. }))
            .count()
    }
    fn invalid(&self) -> Vec<&TurnEvent> {
        self.events
            .iter()
            .filter(|e| matches!(e, TurnEvent::InvalidCall { .. }))
            .collect()
    }
    fn started(&self) -> usize {
        self.events
            .iter()
            .filter(|e| matches!(e, TurnEvent::ToolCallStarted))
            .count()
    }
    fn text(&self) -> String {
        self.events
            .iter()
            .filter_map(|e| match e {
                TurnEvent::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

#[allow(clippy::too_many_arguments)]
fn run(
    model: &Model,
    tools: &[ToolSpec],
    format: ToolCallFormat,
    prompt: &str,
    choice: Option<&ToolChoice>,
    jump_forward: bool,
    sampling: SamplingParams,
    max_new_tokens: usize,
) -> Outcome {
    let c = RefCell::new(conversation(tools, format, prompt));
    let ids = prompt_ids(model, &c.borrow());
    let request = request(sampling, max_new_tokens, None);
    let mut turn = match choice {
        // A turn as pages start it: the assembly renders the prompt and builds the constraint.
        Some(choice) if jump_forward && model.template.is_some() => {
            pollster::block_on(model.start_turn(&c, request, choice))
                .unwrap()
                .0
        }
        // Baselines no page can ask for (no constraint, masking without jump-forward) and the tiny
        // model, which has no chat template: the constraint under test added to a plain generation.
        _ => {
            let (mut generation, _) =
                pollster::block_on(model.start_generation(&ids, request)).unwrap();
            if let Some(choice) = choice {
                let env = model.grammar_env().unwrap();
                let constraint =
                    tool_constraint(env, &c.borrow().tools, format, choice, None, jump_forward)
                        .unwrap();
                generation.add_processor(Box::new(constraint));
            }
            Turn::new(generation, &c.borrow())
        }
    };
    let mut outcome = Outcome::default();
    loop {
        let t0 = Instant::now();
        let step = pollster::block_on(turn.step(
            &mut model.decoder.borrow_mut(),
            model.tokenizer().unwrap(),
            &mut c.borrow_mut(),
        ))
        .unwrap();
        outcome.constrained_ms += t0.elapsed().as_secs_f64() * 1e3;
        outcome.events.extend(step.events);
        if step.finish.is_some() {
            outcome.finish = step.finish;
            break;
        }
    }
    let usage = turn.generation().usage();
    outcome.forced = usage.forced_tokens;
    outcome.completion = usage.completion_tokens;
    let decoder = model.decoder.borrow();
    outcome.tokens = decoder.tokens()[ids.len()..decoder.len()].to_vec();
    outcome
}

fn sampled(seed: u64) -> SamplingParams {
    SamplingParams {
        temperature: 1.0,
        seed: Some(seed),
        ..SamplingParams::default()
    }
}

fn greedy() -> SamplingParams {
    SamplingParams {
        temperature: 0.0,
        ..SamplingParams::default()
    }
}

/// Every call of every constrained message is valid, but for one the token budget cut short (a grammar
/// cannot make a call fit a budget); returns (valid calls, calls cut by the budget, messages).
fn all_valid(
    model: &Model,
    format: ToolCallFormat,
    choice: &ToolChoice,
    seeds: u64,
) -> (usize, usize, usize) {
    let (mut valid, mut cut, mut messages) = (0, 0, 0);
    for (s, tools) in tool_sets().iter().enumerate() {
        for (p, prompt) in PROMPTS.iter().enumerate() {
            for seed in 0..seeds {
                let mut o = run(
                    model,
                    tools,
                    format,
                    prompt,
                    Some(choice),
                    true,
                    sampled(seed),
                    400,
                );
                if o.finish == Some(FinishReason::Length) {
                    if let Some(TurnEvent::InvalidCall { error, .. }) = o.events.last() {
                        assert!(error.contains("not closed"), "{error}");
                        o.events.pop();
                        o.events.pop_if(|e| *e == TurnEvent::ToolCallStarted);
                        cut += 1;
                    }
                }
                assert!(
                    o.invalid().is_empty(),
                    "set {s}, prompt {p}, seed {seed}: {:?}\n{o:?}",
                    o.invalid()
                );
                assert_eq!(
                    o.started(),
                    o.valid(),
                    "set {s}, prompt {p}, seed {seed}: {o:?}"
                );
                if *choice != ToolChoice::Auto {
                    assert!(o.valid() >= 1, "set {s}, prompt {p}, seed {seed}: {o:?}");
                }
                valid += o.valid();
                messages += 1;
            }
        }
    }
    (valid, cut, messages)
}

#[test]
fn tiny_random_model_only_writes_valid_calls() {
    let model = tiny();
    for format in [ToolCallFormat::Hermes, ToolCallFormat::Llama3Json] {
        let (valid, cut, messages) = all_valid(&model, format, &ToolChoice::Required, 4);
        eprintln!("tiny model, {format:?}, required: {valid} valid calls, 0 invalid, {cut} cut by the budget, in {messages} messages");
    }
}

#[test]
fn tiny_random_model_unconstrained_writes_no_valid_call() {
    // The baseline the constraint is measured against: on its own the fixture writes garbage.
    let model = tiny();
    let tools = &tool_sets()[0];
    let o = run(
        &model,
        tools,
        ToolCallFormat::Hermes,
        PROMPTS[0],
        None,
        false,
        sampled(0),
        200,
    );
    assert_eq!(o.valid(), 0, "{o:?}");
}

#[test]
fn bundled_model_only_writes_valid_calls() {
    let model = bundled();
    for choice in [ToolChoice::Required, ToolChoice::Auto] {
        let (valid, cut, messages) = all_valid(&model, ToolCallFormat::Hermes, &choice, 3);
        eprintln!("bundled model, Hermes, {choice:?}: {valid} valid calls, 0 invalid, {cut} cut by the budget, in {messages} messages");
    }
    // Speed: per generated token, constrained (masks, jump-forward) against free decoding of as many
    // tokens, on the same prompts; and the share of tokens forced.
    let (mut forced, mut tokens, mut constrained_ms, mut free_ms, mut free_tokens) =
        (0, 0, 0.0, 0.0, 0);
    for (p, prompt) in PROMPTS.iter().enumerate() {
        let tools = &tool_sets()[p % 3];
        let o = run(
            &model,
            tools,
            ToolCallFormat::Hermes,
            prompt,
            Some(&ToolChoice::Required),
            true,
            greedy(),
            400,
        );
        forced += o.forced;
        tokens += o.completion;
        constrained_ms += o.constrained_ms;
        let free = run(
            &model,
            tools,
            ToolCallFormat::Hermes,
            prompt,
            None,
            false,
            greedy(),
            o.completion,
        );
        free_ms += free.constrained_ms;
        free_tokens += free.completion;
    }
    eprintln!(
        "bundled model, greedy, required: {forced} of {tokens} tokens forced ({:.0}%); {:.3} ms per token constrained, {:.3} ms per token free",
        100.0 * forced as f64 / tokens as f64,
        constrained_ms / tokens as f64,
        free_ms / free_tokens as f64
    );
}

#[test]
fn tool_choice_modes() {
    let model = bundled();
    let tools = &tool_sets()[0];
    for seed in 0..6 {
        let prompt = PROMPTS[seed as usize % PROMPTS.len()];
        // none: never a call, even where the model would call one.
        let o = run(
            &model,
            tools,
            ToolCallFormat::Hermes,
            prompt,
            Some(&ToolChoice::None),
            true,
            sampled(seed),
            200,
        );
        assert_eq!(o.started(), 0, "none: {o:?}");
        assert!(!o.text().contains("<tool_call>"), "none: {o:?}");
        // required: the message opens with a call.
        let o = run(
            &model,
            tools,
            ToolCallFormat::Hermes,
            prompt,
            Some(&ToolChoice::Required),
            true,
            sampled(seed),
            400,
        );
        assert_eq!(
            o.events.first(),
            Some(&TurnEvent::ToolCallStarted),
            "required: {o:?}"
        );
        assert!(o.text().trim().is_empty(), "required: {o:?}");
        // named: only that tool.
        let named = ToolChoice::Named("get_time".into());
        let o = run(
            &model,
            tools,
            ToolCallFormat::Hermes,
            prompt,
            Some(&named),
            true,
            sampled(seed),
            400,
        );
        assert!(o.valid() >= 1, "named: {o:?}");
        for e in &o.events {
            if let TurnEvent::ToolCall { name, .. } = e {
                assert_eq!(name, "get_time");
            }
        }
    }
    // Llama 3 JSON: `none` keeps the message from starting like a call.
    let tiny = tiny();
    for seed in 0..6 {
        let o = run(
            &tiny,
            tools,
            ToolCallFormat::Llama3Json,
            PROMPTS[0],
            Some(&ToolChoice::None),
            true,
            sampled(seed),
            60,
        );
        assert_eq!(o.started(), 0, "llama none: {o:?}");
        let o = run(
            &tiny,
            tools,
            ToolCallFormat::Llama3Json,
            PROMPTS[0],
            Some(&ToolChoice::Auto),
            true,
            sampled(seed),
            400,
        );
        assert!(o.invalid().is_empty(), "llama auto: {o:?}");
    }
}

#[test]
fn jump_forward_gives_the_tokens_of_masking_alone() {
    for model in [bundled(), tiny()] {
        let (mut forced, mut total) = (0, 0);
        for (s, tools) in tool_sets().iter().enumerate() {
            for prompt in PROMPTS {
                for format in [ToolCallFormat::Hermes, ToolCallFormat::Llama3Json] {
                    let choice = ToolChoice::Required;
                    let masked = run(
                        &model,
                        tools,
                        format,
                        prompt,
                        Some(&choice),
                        false,
                        greedy(),
                        300,
                    );
                    let jumped = run(
                        &model,
                        tools,
                        format,
                        prompt,
                        Some(&choice),
                        true,
                        greedy(),
                        300,
                    );
                    // The last step's tokens are not run when the budget ends the generation, and that
                    // step may hold several tokens with jump-forward: compare what both ran.
                    let n = masked.tokens.len().min(jumped.tokens.len());
                    assert_eq!(
                        masked.tokens[..n],
                        jumped.tokens[..n],
                        "set {s}, {prompt:?}, {format:?}"
                    );
                    assert_eq!(masked.events, jumped.events);
                    assert_eq!(masked.forced, 0);
                    forced += jumped.forced;
                    total += jumped.completion;
                }
            }
        }
        eprintln!("jump-forward: {forced} of {total} tokens forced");
        assert!(forced > 0);
    }
}

#[test]
fn unusable_schemas_are_coded_errors() {
    let model = tiny();
    let weird = [
        // Look-around is not in llguidance's regular expressions.
        json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "(?=a)a"}}}),
        json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "(a)\\1"}}}),
        // Contradictions leave no value at all.
        json!({"type": "object", "properties": {"a": {"type": "integer", "minimum": 5, "maximum": 1}}, "required": ["a"]}),
        json!({"type": "object", "properties": {"a": {"allOf": [{"type": "string"}, {"type": "integer"}]}}, "required": ["a"]}),
    ];
    for parameters in weird {
        let mut c = Conversation::new(None, ToolCallFormat::Hermes, 100);
        c.tools.register(tool("t", parameters.clone())).unwrap();
        match tool_constraint(
            model.grammar_env().unwrap(),
            &c.tools,
            ToolCallFormat::Hermes,
            &ToolChoice::Required,
            None,
            true,
        ) {
            Err(e) => assert_eq!(e.code(), "TOOL_GRAMMAR", "{parameters}: {e}"),
            Ok(_) => panic!("{parameters}: compiled"),
        }
    }
    let c = conversation(&tool_sets()[0], ToolCallFormat::Hermes, "x");
    let unknown = ToolChoice::Named("nope".into());
    let e = tool_constraint(
        model.grammar_env().unwrap(),
        &c.tools,
        ToolCallFormat::Hermes,
        &unknown,
        None,
        true,
    )
    .err()
    .unwrap();
    assert_eq!(e.code(), "UNKNOWN_TOOL");
}

/// Feeds `text` (as the tokenizer splits it) through a constraint token by token: each token must be
/// allowed. Returns the mean time of a masking step in ms.
fn accepts(
    env: &GrammarEnv,
    tokenizer: &Tokenizer,
    vocab: usize,
    format: ToolCallFormat,
    choice: &ToolChoice,
    text: &str,
) -> f64 {
    let c = conversation(&tool_sets()[0], format, "x");
    let mut constraint = tool_constraint(env, &c.tools, format, choice, None, false).unwrap();
    let ids = tokenizer.encode(text).unwrap();
    let mut logits = vec![0.0f32; vocab];
    let t0 = Instant::now();
    for (i, &id) in ids.iter().enumerate() {
        logits.fill(0.0);
        constraint.process(&[], &mut logits).unwrap();
        assert!(
            logits[id as usize].is_finite(),
            "{choice:?}: token {i} ({:?}) of {text:?} is masked",
            tokenizer.decode(&[id]).unwrap()
        );
        constraint.accept(id).unwrap();
    }
    t0.elapsed().as_secs_f64() * 1e3 / ids.len() as f64
}

#[test]
fn qwen3_vocabulary_allows_what_templates_write() {
    // Qwen3's 151,669-token vocabulary (`<tool_call>` is an added, non-special token there): the forms its
    // template writes pass the mask token by token, and a mask over the whole vocabulary is cheap.
    let path = root().join("tests/fixtures/tokenizers/qwen3.tokenizer.json");
    let tokenizer = Tokenizer::from_json(&std::fs::read(path).unwrap()).unwrap();
    let vocab = 151_936;
    let eos = vec![tokenizer.token_id("<|im_end|>").unwrap()];
    let t0 = Instant::now();
    let env = GrammarEnv::new(&tokenizer, vocab, &eos).unwrap();
    let build_ms = t0.elapsed().as_secs_f64() * 1e3;
    let call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Zürich\", \"unit\": \"celsius\"}}\n</tool_call>";
    let mut ms = Vec::new();
    for (choice, text) in [
        (ToolChoice::Required, format!("{call}<|im_end|>")),
        (ToolChoice::Required, format!("{call}\n{call}<|im_end|>")),
        (ToolChoice::Auto, format!("Let me check {{that}} <b>now</b>.\n{call}\nDone.<|im_end|>")),
        (ToolChoice::Auto, "Just text, <tool_ no call.<|im_end|>".to_string()),
        (ToolChoice::None, "Text only.<|im_end|>".to_string()),
        (ToolChoice::Named("get_time".into()), "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"UTC\"}}\n</tool_call><|im_end|>".to_string()),
    ] {
        ms.push(accepts(&env, &tokenizer, vocab, ToolCallFormat::Hermes, &choice, &text));
    }
    for (choice, text) in [
        (ToolChoice::Required, "{\"name\": \"get_time\", \"parameters\": {\"timezone\": \"CET\"}}<|im_end|>"),
        (ToolChoice::Auto, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}; {\"name\": \"get_time\", \"parameters\": {\"timezone\": \"CET\"}}<|im_end|>"),
        (ToolChoice::Auto, "It is sunny.<|im_end|>"),
    ] {
        ms.push(accepts(&env, &tokenizer, vocab, ToolCallFormat::Llama3Json, &choice, text));
    }
    eprintln!(
        "Qwen3 vocabulary: grammar environment built in {build_ms:.0} ms; {:.3} ms per masked step (mean over forms)",
        ms.iter().sum::<f64>() / ms.len() as f64
    );
    // And what the grammar forbids: an unknown tool, a wrong enum value, a missing required field.
    let c = conversation(&tool_sets()[0], ToolCallFormat::Hermes, "x");
    for bad in [
        "<tool_call>\n{\"name\": \"get_wether\"",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"x\", \"unit\": \"kelvin\"",
        "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}",
    ] {
        let mut constraint = tool_constraint(&env, &c.tools, ToolCallFormat::Hermes, &ToolChoice::Auto, None, false).unwrap();
        let mut refused = false;
        let mut logits = vec![0.0f32; vocab];
        for id in tokenizer.encode(bad).unwrap() {
            logits.fill(0.0);
            constraint.process(&[], &mut logits).unwrap();
            if !logits[id as usize].is_finite() {
                refused = true;
                break;
            }
            constraint.accept(id).unwrap();
        }
        assert!(refused, "{bad:?} was allowed");
    }
}

#[test]
fn tags_that_are_special_tokens() {
    // Where `<tool_call>` is a special token (its bytes cannot be written as text), the grammar names the
    // token: the same forms pass, and `none` masks it.
    let path = root().join("tests/fixtures/tokenizers/qwen3.tokenizer.json");
    let mut json: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    for added in json["added_tokens"].as_array_mut().unwrap() {
        if added["content"] == "<tool_call>" || added["content"] == "</tool_call>" {
            added["special"] = json!(true);
        }
    }
    let tokenizer = Tokenizer::from_json(&serde_json::to_vec(&json).unwrap()).unwrap();
    let vocab = 151_936;
    let eos = vec![tokenizer.token_id("<|im_end|>").unwrap()];
    let env = GrammarEnv::new(&tokenizer, vocab, &eos).unwrap();
    let call = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"UTC\"}}\n</tool_call>";
    for (choice, text) in [
        (ToolChoice::Required, format!("{call}\n{call}<|im_end|>")),
        (ToolChoice::Auto, format!("Sure.\n{call}\nDone.<|im_end|>")),
        (ToolChoice::Auto, "No call.<|im_end|>".to_string()),
    ] {
        accepts(
            &env,
            &tokenizer,
            vocab,
            ToolCallFormat::Hermes,
            &choice,
            &text,
        );
    }
    let c = conversation(&tool_sets()[0], ToolCallFormat::Hermes, "x");
    let mut none = tool_constraint(
        &env,
        &c.tools,
        ToolCallFormat::Hermes,
        &ToolChoice::None,
        None,
        false,
    )
    .unwrap();
    let mut logits = vec![0.0f32; vocab];
    none.process(&[], &mut logits).unwrap();
    let open = tokenizer.token_id("<tool_call>").unwrap() as usize;
    assert_eq!(logits[open], f32::NEG_INFINITY);
    assert!(logits[tokenizer.encode("Hi").unwrap()[0] as usize].is_finite());
}

/// Answer schemas: enums, bounded and unbounded numbers, booleans, nested objects, arrays, `anyOf` with
/// null, optional fields. Strings are bounded so that the models end within the budget (a grammar cannot
/// make a weak model close a string: see `json_object_answers`).
fn answer_formats() -> Vec<ResponseFormat> {
    let schema = |schema: Value| {
        serde_json::from_value::<ResponseFormat>(
            json!({"type": "json_schema", "json_schema": {"name": "answer", "schema": schema, "strict": true}}),
        )
        .unwrap()
    };
    vec![
        schema(json!({"type": "object", "properties": {
            "city": {"type": "string", "maxLength": 16},
            "temperature_c": {"type": "number", "minimum": -90, "maximum": 60},
            "condition": {"enum": ["sunny", "rainy", "cloudy"]},
            "windy": {"type": "boolean"}},
            "required": ["city", "temperature_c", "condition"], "additionalProperties": false})),
        schema(json!({"type": "object", "properties": {
            "title": {"type": "string", "minLength": 1, "maxLength": 20},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "minItems": 1, "maxItems": 3},
            "when": {"type": "object", "properties": {
                "hour": {"type": "integer", "minimum": 0, "maximum": 23},
                "minute": {"type": "integer", "minimum": 0, "maximum": 59}},
                "required": ["hour", "minute"], "additionalProperties": false},
            "note": {"anyOf": [{"type": "string", "maxLength": 10}, {"type": "null"}]}},
            "required": ["title", "tags", "when", "note"], "additionalProperties": false})),
        schema(
            json!({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 4}),
        ),
    ]
}

const ANSWER_PROMPTS: &[&str] = &[
    "What's the weather in Paris? Answer in JSON.",
    "Make a note: dentist at 9:15.",
    "List a few numbers.",
    "hello",
    "Describe Tokyo's weather as JSON.",
    "Remind me to call Ana at 18:00, tag it family.",
];

/// One answer in `format`: its text, its finish reason, and the tokens it took.
fn answer(
    model: &Model,
    format: &ResponseFormat,
    prompt: &str,
    sampling: SamplingParams,
) -> (String, Option<FinishReason>, usize) {
    let c = conversation(&[], ToolCallFormat::Hermes, prompt);
    let ids = prompt_ids(model, &c);
    let request = request(sampling, 300, Some(format.clone()));
    let (mut generation, _) = pollster::block_on(model.start_generation(&ids, request)).unwrap();
    let mut text = String::new();
    loop {
        let step = pollster::block_on(
            generation.step(&mut model.decoder.borrow_mut(), model.tokenizer().unwrap()),
        )
        .unwrap();
        text.push_str(&step.text);
        if step.finish.is_some() {
            return (text, step.finish, generation.usage().completion_tokens);
        }
    }
}

/// Every answer of every format, prompt and seed parses and validates; returns the number of answers.
fn all_answers_valid(model: &Model, seeds: u64) -> usize {
    let mut answers = 0;
    for (f, format) in answer_formats().iter().enumerate() {
        let validator = jsonschema::validator_for(&format.schema().unwrap()).unwrap();
        for (p, prompt) in ANSWER_PROMPTS.iter().enumerate() {
            for seed in 0..seeds {
                let (text, finish, _) = answer(model, format, prompt, sampled(seed));
                let at = format!("format {f}, prompt {p}, seed {seed}: {text:?}");
                assert_eq!(finish, Some(FinishReason::EosToken), "{at}");
                let value: Value =
                    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{at}: {e}"));
                let problems: Vec<String> = validator
                    .iter_errors(&value)
                    .map(|e| e.to_string())
                    .collect();
                assert!(problems.is_empty(), "{at}: {problems:?}");
                answers += 1;
            }
        }
    }
    answers
}

#[test]
fn tiny_random_model_only_writes_valid_json_answers() {
    let model = tiny();
    let n = all_answers_valid(&model, 3);
    eprintln!("tiny model: {n} JSON answers, all valid");
}

#[test]
fn bundled_model_only_writes_valid_json_answers() {
    let model = bundled();
    let n = all_answers_valid(&model, 3);
    json_object_answers(&model);
    let (text, _, tokens) = answer(&model, &answer_formats()[0], ANSWER_PROMPTS[0], greedy());
    eprintln!("bundled model: {n} JSON answers, all valid; greedy, {tokens} tokens: {text}");
}

/// `{ type: "json_object" }`: any object, so its strings are unbounded and the undertrained model may write
/// one until the budget ends it; every answer that ends is an object.
fn json_object_answers(model: &Model) {
    let format: ResponseFormat = serde_json::from_value(json!({"type": "json_object"})).unwrap();
    let (mut ended, mut cut) = (0, 0);
    for prompt in ANSWER_PROMPTS {
        let (text, finish, _) = answer(model, &format, prompt, greedy());
        assert!(text.starts_with('{'), "{prompt:?}: {text:?}");
        if finish == Some(FinishReason::Length) {
            cut += 1;
            continue;
        }
        let value: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert!(value.is_object(), "{text:?}");
        ended += 1;
    }
    eprintln!("bundled model, json_object, greedy: {ended} objects, {cut} cut by the budget of 300 tokens");
}

#[test]
fn answers_or_calls_with_tools() {
    // With tools and a JSON answer, a message is valid calls or the valid answer, never text.
    let model = bundled();
    let format = &answer_formats()[0];
    let schema = format.schema().unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let tools = &tool_sets()[0];
    let (mut calls, mut answers) = (0, 0);
    for (p, prompt) in ANSWER_PROMPTS.iter().chain(PROMPTS).enumerate() {
        for seed in 0..3 {
            let c = RefCell::new(conversation(tools, ToolCallFormat::Hermes, prompt));
            let request = request(sampled(seed), 300, Some(format.clone()));
            let (mut turn, _) =
                pollster::block_on(model.start_turn(&c, request, &ToolChoice::Auto)).unwrap();
            let mut o = Outcome::default();
            loop {
                let step = pollster::block_on(turn.step(
                    &mut model.decoder.borrow_mut(),
                    model.tokenizer().unwrap(),
                    &mut c.borrow_mut(),
                ))
                .unwrap();
                o.events.extend(step.events);
                if step.finish.is_some() {
                    o.finish = step.finish;
                    break;
                }
            }
            let at = format!("prompt {p}, seed {seed}: {o:?}");
            assert_eq!(o.finish, Some(FinishReason::EosToken), "{at}");
            assert!(o.invalid().is_empty(), "{at}");
            if o.valid() > 0 {
                assert!(o.text().trim().is_empty(), "{at}");
                calls += o.valid();
            } else {
                let value: Value =
                    serde_json::from_str(&o.text()).unwrap_or_else(|e| panic!("{at}: {e}"));
                assert!(validator.is_valid(&value), "{at}");
                answers += 1;
            }
        }
    }
    eprintln!("bundled model, tools and a JSON answer: {calls} valid calls, {answers} valid answers, nothing else");
    // Both are open at the message's start, whatever a model prefers (this one nearly always calls).
    let tokenizer = model.tokenizer().unwrap();
    let c = conversation(tools, ToolCallFormat::Hermes, "x");
    let mut start = tool_constraint(
        model.grammar_env().unwrap(),
        &c.tools,
        ToolCallFormat::Hermes,
        &ToolChoice::Auto,
        Some(&schema),
        true,
    )
    .unwrap();
    assert_eq!(start.jump_forward().unwrap(), Vec::<u32>::new());
    let mut logits = vec![0.0; model.config.vocab_size];
    start.process(&[], &mut logits).unwrap();
    let open = tokenizer.token_id("<tool_call>").unwrap() as usize;
    let brace = tokenizer.encode("{").unwrap()[0] as usize;
    assert!(logits[open].is_finite() && logits[brace].is_finite());
    // "none" leaves the answer alone; Llama 3 JSON calls cannot share "auto" with a JSON answer.
    let c = conversation(tools, ToolCallFormat::Llama3Json, "x");
    let e = tool_constraint(
        model.grammar_env().unwrap(),
        &c.tools,
        ToolCallFormat::Llama3Json,
        &ToolChoice::Auto,
        Some(&schema),
        true,
    )
    .err()
    .unwrap();
    assert_eq!(e.code(), "INVALID_REQUEST");
    assert!(tool_constraint(
        model.grammar_env().unwrap(),
        &c.tools,
        ToolCallFormat::Llama3Json,
        &ToolChoice::None,
        Some(&schema),
        true
    )
    .is_ok());
}

#[test]
fn unusable_response_formats_are_coded_errors() {
    let model = tiny();
    let read = |v: Value| serde_json::from_value::<ResponseFormat>(v).unwrap();
    let text = read(json!({"type": "text"}));
    assert!(
        response_constraint(model.grammar_env().unwrap(), &text, true)
            .unwrap()
            .is_none()
    );
    for schema in [
        json!(true),
        json!({"type": 5}),
        json!({"type": "string", "pattern": "(?=a)a"}),
        json!({"type": "array", "uniqueItems": true}),
        json!({"type": "integer", "minimum": 5, "maximum": 1}),
        json!({"allOf": [{"type": "string"}, {"type": "integer"}]}),
    ] {
        let format =
            read(json!({"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}));
        match response_constraint(model.grammar_env().unwrap(), &format, true) {
            Err(e) => assert_eq!(e.code(), "RESPONSE_FORMAT", "{schema}: {e}"),
            Ok(_) => panic!("{schema}: compiled"),
        }
    }
}
