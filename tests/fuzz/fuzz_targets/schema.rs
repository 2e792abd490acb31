//! Tool schemas and response formats as a page sends them: any JSON value from the input, wrapped in
//! objects, `anyOf`s and arrays as many times as byte 0 says (up to 765 levels: deeper than serde_json's
//! parser allows, as values that arrive from JavaScript can be), as a tool's parameters and as a response
//! format, through registration and the grammars built from them (the order the agent uses).
//!
//! Properties: each step succeeds or answers with its coded error; a schema nested deeper than
//! `MAX_SCHEMA_DEPTH` is refused before anything walks it recursively; nothing panics or overflows.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use wisp::agent::{tool_constraint, ToolCallFormat, ToolChoice, ToolRegistry, ToolSpec};
use wisp::grammar::{
    response_constraint, GrammarEnv, JsonSchemaFormat, ResponseFormat, MAX_SCHEMA_DEPTH,
};
use wisp::text::Tokenizer;

/// The bundled model's vocabulary, built once.
fn env() -> &'static GrammarEnv {
    static ENV: OnceLock<GrammarEnv> = OnceLock::new();
    ENV.get_or_init(|| {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/wisp-mini");
        let tokenizer =
            Tokenizer::from_json(&std::fs::read(format!("{dir}/tokenizer.json")).unwrap())
                .expect("the bundled tokenizer");
        let end = tokenizer.token_id("<|im_end|>").expect("<|im_end|>");
        GrammarEnv::new(&tokenizer, tokenizer.vocab_size(), &[end]).expect("grammar env")
    })
}

/// How deep objects and arrays nest in `value`.
fn depth(value: &Value) -> usize {
    match value {
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        Value::Array(list) => 1 + list.iter().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fn expect_code<T>(result: &wisp::Result<T>, allowed: &[&str]) {
    if let Err(e) = result {
        assert!(allowed.contains(&e.code()), "unexpected {}: {e}", e.code());
    }
}

fuzz_target!(|bytes: &[u8]| {
    let Some((&wraps, rest)) = bytes.split_first() else {
        return;
    };
    let mut schema: Value = serde_json::from_slice(rest)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(rest).into_owned()));
    for i in 0..usize::from(wraps) {
        schema = match i % 3 {
            0 => json!({"type": "object", "properties": {"a": schema}}),
            1 => json!({"anyOf": [schema]}),
            _ => json!({"type": "array", "items": schema}),
        };
    }
    let too_deep = depth(&schema) > MAX_SCHEMA_DEPTH;

    // As a tool's parameters: the schema itself when it is an object schema, else under a property.
    let parameters = if schema.get("type") == Some(&json!("object")) {
        schema.clone()
    } else {
        json!({"type": "object", "properties": {"x": schema.clone()}})
    };
    let mut tools = ToolRegistry::new();
    let registered = tools.register(ToolSpec {
        name: "t".into(),
        description: "A tool.".into(),
        parameters: parameters.clone(),
    });
    expect_code(&registered, &["INVALID_TOOL"]);
    if depth(&parameters) > MAX_SCHEMA_DEPTH {
        assert!(
            registered.is_err(),
            "a schema {} deep was registered",
            depth(&parameters)
        );
    }
    if registered.is_ok() {
        for choice in [
            ToolChoice::Auto,
            ToolChoice::Required,
            ToolChoice::Named("t".into()),
        ] {
            let built = tool_constraint(env(), &tools, ToolCallFormat::Hermes, &choice, None, true);
            expect_code(&built, &["TOOL_GRAMMAR"]);
        }
    }

    // As a response format, and then as the answer beside the tool (the agent checks it alone first).
    let format = ResponseFormat::JsonSchema {
        json_schema: JsonSchemaFormat {
            name: None,
            description: None,
            schema: schema.clone(),
            strict: None,
        },
    };
    let answer = response_constraint(env(), &format, true);
    expect_code(&answer, &["RESPONSE_FORMAT"]);
    if too_deep {
        assert!(
            answer.is_err(),
            "a response format {} deep was accepted",
            depth(&schema)
        );
    }
    if answer.is_ok() && registered.is_ok() {
        // Hermes: a JSON answer beside tools is refused for Llama 3 JSON calls, which look like answers.
        let built = tool_constraint(
            env(),
            &tools,
            ToolCallFormat::Hermes,
            &ToolChoice::Auto,
            Some(&schema),
            true,
        );
        expect_code(&built, &["TOOL_GRAMMAR"]);
    }
});
