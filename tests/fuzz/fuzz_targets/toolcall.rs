//! A model's output through the tool-call parser, streamed as an agent turn streams it, then each call
//! through the tool registry's argument check.
//!
//! Input: byte 0 picks the format (even: Hermes `<tool_call>`, odd: Llama 3 JSON), byte 1 the size of the
//! stream's pieces (0: the whole text at once, n: n characters at a time), the rest is the model's text.
//!
//! Properties: the events do not depend on how the text was split; text without a call comes out whole
//! and Hermes text never shows an opening tag; ids count valid calls; every call's arguments are an object
//! and the call round-trips (written back the way the format writes it, it parses to the same call); the
//! registry answers with a coded error or accepts.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use wisp::agent::{
    canonical_json, ParseEvent, ToolCallFormat, ToolCallParser, ToolRegistry, ToolSpec,
};

/// Feeds `pieces` and finishes, merging consecutive text (its chunking depends on the pieces).
fn parse(format: ToolCallFormat, pieces: &[&str]) -> Vec<ParseEvent> {
    let mut parser = ToolCallParser::new(format);
    let mut events: Vec<ParseEvent> = pieces.iter().flat_map(|p| parser.push(p)).collect();
    events.extend(parser.finish());
    let mut merged: Vec<ParseEvent> = Vec::new();
    for event in events {
        match (merged.last_mut(), event) {
            (Some(ParseEvent::Text(before)), ParseEvent::Text(more)) => before.push_str(&more),
            (_, event) => merged.push(event),
        }
    }
    merged
}

fn pieces(text: &str, chars: usize) -> Vec<&str> {
    if chars == 0 {
        return vec![text];
    }
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let cut = rest
            .char_indices()
            .nth(chars)
            .map_or(rest.len(), |(at, _)| at);
        let (piece, tail) = rest.split_at(cut);
        out.push(piece);
        rest = tail;
    }
    out
}

/// The call as the model's format writes it.
fn write_call(format: ToolCallFormat, name: &str, arguments: &Value) -> String {
    let name = Value::String(name.to_string());
    match format {
        ToolCallFormat::Hermes => format!(
            "<tool_call>\n{{\"name\": {name}, \"arguments\": {}}}\n</tool_call>",
            canonical_json(arguments)
        ),
        ToolCallFormat::Llama3Json => format!(
            "{{\"name\": {name}, \"parameters\": {}}}",
            canonical_json(arguments)
        ),
    }
}

/// The demo's weather tool, registered once (compiling its schema is most of a run's time otherwise).
fn registry() -> &'static ToolRegistry {
    static TOOLS: OnceLock<ToolRegistry> = OnceLock::new();
    TOOLS.get_or_init(|| {
    let mut tools = ToolRegistry::new();
    tools
        .register(ToolSpec {
            name: "get_weather".into(),
            description: "Get the current weather for a city.".into(),
            parameters: json!({"type": "object", "properties": {"city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}),
        })
        .expect("the demo tool registers");
    tools
    })
}

fuzz_target!(|bytes: &[u8]| {
    let [format, chunk, rest @ ..] = bytes else {
        return;
    };
    let format = if format % 2 == 0 {
        ToolCallFormat::Hermes
    } else {
        ToolCallFormat::Llama3Json
    };
    let text = String::from_utf8_lossy(rest);
    let events = parse(format, &pieces(&text, usize::from(*chunk)));
    assert_eq!(
        events,
        parse(format, &[&text]),
        "the events depend on how the text was split"
    );

    let started = events.iter().any(|e| *e == ParseEvent::ToolCallStarted);
    // Consecutive text is one piece (`parse` merges it); pieces on either side of a call are not.
    let texts: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            ParseEvent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    if !started {
        assert_eq!(
            texts.concat(),
            text,
            "text without a call must come out whole"
        );
    }
    if format == ToolCallFormat::Hermes {
        assert!(
            texts.iter().all(|t| !t.contains("<tool_call>")),
            "an opening tag was shown as text"
        );
    }

    let tools = registry();
    let mut next_id = 0;
    for event in &events {
        let ParseEvent::ToolCall {
            id,
            name,
            arguments,
        } = event
        else {
            continue;
        };
        assert_eq!(*id, format!("call_{next_id}"));
        next_id += 1;
        assert!(
            arguments.is_object(),
            "arguments {arguments} are not an object"
        );
        assert!(!name.trim().is_empty());
        let again = parse(format, &[&write_call(format, name, arguments)]);
        assert_eq!(
            again,
            [
                ParseEvent::ToolCallStarted,
                ParseEvent::ToolCall {
                    id: "call_0".into(),
                    name: name.clone(),
                    arguments: arguments.clone()
                }
            ],
            "the call does not round-trip"
        );
        if let Err(e) = tools.validate_arguments(name, arguments) {
            assert!(
                ["UNKNOWN_TOOL", "INVALID_TOOL_ARGUMENTS"].contains(&e.code()),
                "{e}"
            );
        }
    }
});
