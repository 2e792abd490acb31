//! Chat templates with fuzzed conversations, as `model.renderChat(messages, tools)` and the agent render
//! them, and fuzzed template sources, as a GGUF file may carry one.
//!
//! Input: a JSON object `{"messages": [...], "tools": ..., "add_generation_prompt": bool}` is rendered by
//! fixed real templates: the bundled model's (`models/wisp-mini`), SmolLM2's, Qwen2.5's and Llama 3.1's
//! (tests/fixtures/templates/). Any other input is a template source, rendering a fixed conversation.
//!
//! Properties: a template that does not compile, or runs too long, is `INVALID_MODEL`; no messages or an
//! unknown role is `INVALID_REQUEST`, a render that fails otherwise is `INVALID_INPUT`; with the bundled
//! template, the tool calls of the input's assistant messages, recorded the way the agent records them,
//! render to a prompt from which the tool-call parser reads back the same calls.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use serde::Deserialize;
use serde_json::{json, Value};
use wisp::agent::{Conversation, ParseEvent, RecordedCall, ToolCallFormat, ToolCallParser};
use wisp::text::{ChatTemplate, Message};

const BUNDLED: &str = include_str!("../../../models/wisp-mini/chat_template.jinja");
/// SmolLM2-135M-Instruct's, as its GGUF file carries it.
const SMOLLM2: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
const QWEN25: &str = include_str!("../../fixtures/templates/qwen2.5.jinja");
const LLAMA31: &str = include_str!("../../fixtures/templates/llama3.1.jinja");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Chat {
    messages: Vec<Message>,
    #[serde(default)]
    tools: Option<Value>,
    #[serde(default)]
    add_generation_prompt: bool,
}

struct Templates {
    bundled: ChatTemplate,
    others: Vec<ChatTemplate>,
}

fn templates() -> &'static Templates {
    static T: OnceLock<Templates> = OnceLock::new();
    T.get_or_init(|| Templates {
        bundled: ChatTemplate::new(BUNDLED).expect("the bundled template compiles"),
        others: [SMOLLM2, QWEN25, LLAMA31]
            .iter()
            .map(|s| ChatTemplate::new(s).expect("compiles"))
            .collect(),
    })
}

/// Renders, checking that a failure has one of the `allowed` codes.
fn render(
    template: &ChatTemplate,
    messages: &[Message],
    tools: Option<&Value>,
    add: bool,
    allowed: &[&str],
) {
    if let Err(e) = template.render(messages, tools, add) {
        assert!(allowed.contains(&e.code()), "{e}");
    }
}

/// The calls of the input's assistant messages that the agent could have recorded: a name and an object
/// of arguments (or a string holding one, as OpenAI's API writes them).
fn calls(messages: &[Message]) -> Vec<RecordedCall> {
    let entries = messages
        .iter()
        .filter_map(|m| m.tool_calls.as_ref())
        .flatten();
    let mut out = Vec::new();
    for entry in entries {
        let function = entry.get("function").unwrap_or(entry);
        let Some(name) = function
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.trim().is_empty())
        else {
            continue;
        };
        let arguments = match function.get("arguments") {
            Some(Value::String(s)) => serde_json::from_str(s).ok(),
            other => other.cloned(),
        };
        if let Some(arguments @ Value::Object(_)) = arguments {
            out.push(RecordedCall {
                id: format!("call_{}", out.len()),
                name: name.to_string(),
                arguments,
            });
        }
    }
    out
}

/// The agent's record of `calls`, rendered by the bundled template, parses back to the same calls.
fn calls_round_trip(calls: &[RecordedCall]) {
    let template = &templates().bundled;
    let mut conversation = Conversation::new(None, ToolCallFormat::Hermes, 4000);
    conversation.push_user("What's the weather in Paris?");
    let prompt = conversation.prompt(template).expect("renders");
    conversation.push_assistant("", calls);
    let full = template
        .render(&conversation.messages, None, false)
        .expect("renders");
    let body = full
        .strip_prefix(&prompt)
        .and_then(|rest| rest.strip_suffix("<|im_end|>\n"))
        .unwrap_or_else(|| panic!("the assistant message is not where expected: {full:?}"));
    let mut parser = ToolCallParser::new(ToolCallFormat::Hermes);
    let mut events = parser.push(body);
    events.extend(parser.finish());
    let parsed: Vec<(&str, &Value)> = events
        .iter()
        .filter_map(|e| match e {
            ParseEvent::ToolCall {
                name, arguments, ..
            } => Some((name.as_str(), arguments)),
            ParseEvent::Invalid { raw, error } => {
                panic!("a recorded call reads back invalid ({error}): {raw}")
            }
            _ => None,
        })
        .collect();
    let expected: Vec<(&str, &Value)> = calls
        .iter()
        .map(|c| (c.name.as_str(), &c.arguments))
        .collect();
    assert_eq!(
        parsed, expected,
        "recorded calls do not read back: {body:?}"
    );
}

fuzz_target!(|bytes: &[u8]| {
    let text = String::from_utf8_lossy(bytes);
    match serde_json::from_str::<Chat>(&text) {
        Ok(chat) => {
            let t = templates();
            for template in std::iter::once(&t.bundled).chain(&t.others) {
                render(
                    template,
                    &chat.messages,
                    chat.tools.as_ref(),
                    chat.add_generation_prompt,
                    &["INVALID_INPUT", "INVALID_REQUEST"],
                );
            }
            let calls = calls(&chat.messages);
            if !calls.is_empty() {
                calls_round_trip(&calls);
            }
        }
        Err(_) => match ChatTemplate::new(&text) {
            Ok(template) => {
                let messages = [
                    Message::new("system", "You are a helpful assistant."),
                    Message::new("user", "What's the weather in Paris?"),
                ];
                let tools = json!([{"type": "function", "function": {"name": "get_weather",
                    "description": "Get the current weather for a city.",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]);
                // INVALID_MODEL: a template that runs out of fuel (it would run for too long).
                render(
                    &template,
                    &messages,
                    Some(&tools),
                    true,
                    &["INVALID_INPUT", "INVALID_REQUEST", "INVALID_MODEL"],
                );
            }
            Err(e) => assert_eq!(e.code(), "INVALID_MODEL", "{e}"),
        },
    }
});
