//! Guaranteed-valid tool calls: a grammar of the assistant message, built from the registered tools and the
//! model's tool-call format, that masks the logits so that a call can only name a registered tool and
//! carry arguments that satisfy its parameter schema.
//!
//! The grammar is a Lark grammar for llguidance, with one `%json` schema per tool (llguidance compiles
//! JSON Schema itself). In `auto` mode the text before a call is a lazy lexeme that ends at the call's
//! opener, the pattern llguidance documents for tool calls: the model writes freely until it opens a call,
//! and from there only a complete, valid call can follow. With a `response_format`, the message is calls
//! or the JSON answer instead of calls or text.

use serde::Deserialize;
use serde_json::Value;

use super::{ToolCallFormat, ToolRegistry};
use crate::error::{Result, WispError};
use crate::grammar::{json_rule, lark_string, GrammarConstraint, GrammarEnv};

/// Which calls the model may make, as OpenAI's `tool_choice` says it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolChoice {
    /// Text, calls, or both; once a call is opened it must be valid.
    #[default]
    Auto,
    /// No call: the opener is masked.
    None,
    /// The message is one or more calls, from its first token.
    Required,
    /// The message is one or more calls to this tool.
    Named(String),
}

/// What JavaScript passes: `"auto" | "none" | "required"`, a tool name, or OpenAI's
/// `{ type: "function", function: { name } }`.
#[derive(Deserialize)]
#[serde(untagged)]
enum ToolChoiceInput {
    Word(String),
    Function { function: FunctionName },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FunctionName {
    name: String,
}

impl<'de> Deserialize<'de> for ToolChoice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        Ok(match ToolChoiceInput::deserialize(d)? {
            ToolChoiceInput::Word(word) => match word.as_str() {
                "auto" => ToolChoice::Auto,
                "none" => ToolChoice::None,
                "required" => ToolChoice::Required,
                _ => ToolChoice::Named(word),
            },
            ToolChoiceInput::Function { function } => ToolChoice::Named(function.name),
        })
    }
}

const HERMES_OPEN: &str = "<tool_call>";
const HERMES_CLOSE: &str = "</tool_call>";

/// The Lark grammar of an assistant message: calls to `tools` in `format`, as `choice` allows; where the
/// message may be something else than calls, it is text, or with `answer` a JSON value valid for that
/// schema.
pub fn lark_grammar(
    env: &GrammarEnv,
    tools: &ToolRegistry,
    format: ToolCallFormat,
    choice: &ToolChoice,
    answer: Option<&Value>,
) -> Result<String> {
    let names: Vec<&str> = match choice {
        ToolChoice::Named(name) => {
            if tools.get(name).is_none() {
                return Err(WispError::UnknownTool(name.clone()));
            }
            vec![name.as_str()]
        }
        _ => tools.names().collect(),
    };
    if names.is_empty() && *choice != ToolChoice::None {
        return Err(WispError::InvalidRequest(
            "tool_choice asks for a call, but no tool is registered".into(),
        ));
    }
    let arguments_key = match format {
        ToolCallFormat::Hermes => "arguments",
        ToolCallFormat::Llama3Json => "parameters",
    };
    let mut rules = vec!["%llguidance {}".to_string()];
    let mut alternatives = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let spec = tools
            .get(name)
            .ok_or_else(|| WispError::UnknownTool(name.to_string()))?;
        let prefix = format!("{{\"name\": \"{name}\", \"{arguments_key}\": ");
        rules.push(format!(
            "tool_{i}: {} {} \"}}\"",
            lark_string(&prefix),
            json_rule(&spec.parameters)
        ));
        alternatives.push(format!("tool_{i}"));
    }
    if !alternatives.is_empty() {
        rules.push(format!("body: {}", alternatives.join(" | ")));
    }
    if let Some(schema) = answer {
        rules.push(format!("answer: {}", json_rule(schema)));
    }
    let any = "/(?s:.*)/";
    match format {
        ToolCallFormat::Hermes => {
            let (open, close) = (env.tag(HERMES_OPEN), env.tag(HERMES_CLOSE));
            if !alternatives.is_empty() {
                rules.push(format!("rest: \"\\n\" body \"\\n\" {close}"));
                rules.push(format!("call: {open} rest"));
            }
            // Text that does not contain the opener (a special opener cannot be text anyway).
            let text = if env.is_special(HERMES_OPEN) {
                any.to_string()
            } else {
                format!("{any} & ~/(?s:.*){}(?s:.*)/", regex_escape(HERMES_OPEN))
            };
            rules.push(format!("TEXT: {text}"));
            let calls = "call (\"\\n\" call)*";
            let start = match (choice, answer) {
                (ToolChoice::Required | ToolChoice::Named(_), _) => calls.to_string(),
                (ToolChoice::None, None) => "TEXT".to_string(),
                (ToolChoice::None, Some(_)) => "answer".to_string(),
                (ToolChoice::Auto, Some(_)) => format!("{calls} | answer"),
                (ToolChoice::Auto, None) => {
                    if env.is_special(HERMES_OPEN) {
                        "(TEXT call)* TEXT".to_string()
                    } else {
                        // The lazy head ends at the first opener; the call then runs from its newline.
                        rules.push(format!("head[lazy]: {any} {open}"));
                        "(head rest)* TEXT".to_string()
                    }
                }
            };
            rules.push(format!("start: {start}"));
        }
        ToolCallFormat::Llama3Json => {
            // The message is calls (`; `-separated) or text; text must not look like a call's start.
            rules.push(
                "TEXT: /(?s:.*)/ & ~/[ \\t\\r\\n]*(\\{|<\\|python_tag\\|>)(?s:.*)/".to_string(),
            );
            let calls = "body (\"; \" body)*";
            let start = match (choice, answer) {
                (ToolChoice::Required | ToolChoice::Named(_), _) => calls.to_string(),
                (ToolChoice::None, None) => "TEXT".to_string(),
                (ToolChoice::None, Some(_)) => "answer".to_string(),
                (ToolChoice::Auto, None) => format!("{calls} | TEXT"),
                (ToolChoice::Auto, Some(_)) => {
                    // Both would start with `{`: the parser could not tell an answer from a call.
                    return Err(WispError::InvalidRequest(
                        "a JSON response_format with tools is supported for the Hermes tool-call format only (Llama 3 JSON calls look like JSON answers); use tool_choice \"none\" or \"required\"".into(),
                    ));
                }
            };
            rules.push(format!("start: {start}"));
        }
    }
    Ok(rules.join("\n"))
}

/// Escapes a literal for a Lark `/regex/`.
fn regex_escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        // Not `<` and `>`: escaped, they are word boundaries.
        if "\\.+*?()|[]{}^$#&-~/".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The constraint of an assistant message (see [`lark_grammar`]); an unusable schema or an unknown tool
/// name is an error here, before any token. `jump_forward` as for [`GrammarConstraint::new`].
pub fn tool_constraint(
    env: &GrammarEnv,
    tools: &ToolRegistry,
    format: ToolCallFormat,
    choice: &ToolChoice,
    answer: Option<&Value>,
    jump_forward: bool,
) -> Result<GrammarConstraint> {
    let lark = lark_grammar(env, tools, format, choice, answer)?;
    GrammarConstraint::new(env, lark, WispError::ToolGrammar, jump_forward)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_choice_reads_the_openai_shapes() {
        let read = |v: Value| serde_json::from_value::<ToolChoice>(v).unwrap();
        assert_eq!(read(json!("auto")), ToolChoice::Auto);
        assert_eq!(read(json!("none")), ToolChoice::None);
        assert_eq!(read(json!("required")), ToolChoice::Required);
        assert_eq!(
            read(json!("get_weather")),
            ToolChoice::Named("get_weather".into())
        );
        assert_eq!(
            read(json!({"type": "function", "function": {"name": "now"}})),
            ToolChoice::Named("now".into())
        );
        assert!(serde_json::from_value::<ToolChoice>(json!({"function": {}})).is_err());
        assert!(serde_json::from_value::<ToolChoice>(json!(3)).is_err());
    }
}
