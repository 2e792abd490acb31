//! The agent's conversation: the messages so far, the registered tools, and how tool calls and results are
//! written back into it. Tool results and page content only ever enter as tool messages, never as system
//! text, and they are capped in size.

use serde_json::Value;

use super::{ToolCallFormat, ToolRegistry};
use crate::error::Result;
use crate::text::{ChatTemplate, Message, Tokenizer};

/// JSON as Python's `json.dumps` writes it (`", "` and `": "`, keys in order, no ASCII escaping): the
/// form the bundled model was trained on, and the one Hermes-style templates show.
pub fn canonical_json(value: &Value) -> String {
    match value {
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(canonical_json)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Object(map) => {
            let fields: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), canonical_json(v)))
                .collect();
            format!("{{{}}}", fields.join(", "))
        }
        scalar => scalar.to_string(),
    }
}

/// A call the model made, as the conversation records it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

pub struct Conversation {
    pub messages: Vec<Message>,
    pub tools: ToolRegistry,
    pub format: ToolCallFormat,
    system: Option<String>,
    /// Longest tool result (in characters) that enters the prompt; the rest is cut with a note.
    pub max_result_chars: usize,
}

impl Conversation {
    pub fn new(system: Option<String>, format: ToolCallFormat, max_result_chars: usize) -> Self {
        let mut c = Conversation {
            messages: Vec::new(),
            tools: ToolRegistry::new(),
            format,
            system,
            max_result_chars,
        };
        c.reset();
        c
    }

    /// Forgets every message but the system prompt; the tools stay.
    pub fn reset(&mut self) {
        self.messages.clear();
        if let Some(system) = &self.system {
            self.messages.push(Message::new("system", system));
        }
    }

    pub fn push_user(&mut self, text: &str) {
        self.messages.push(Message::new("user", text));
    }

    /// The prompt for the next assistant message: the messages and tools through the chat template (Hermes
    /// style when the template has no tools section, see `hermes_prompt`).
    pub fn prompt(&self, template: &ChatTemplate) -> Result<String> {
        let tools = if self.tools.is_empty() {
            None
        } else {
            Some(self.tools.openai_tools())
        };
        super::render_chat(template, &self.messages, tools.as_ref(), true)
    }

    /// Records the assistant's message: its text, and the calls it made (arguments as canonical JSON
    /// strings, as OpenAI's API and the bundled model's template have them).
    pub fn push_assistant(&mut self, text: &str, calls: &[RecordedCall]) {
        let text = text.trim();
        let mut message = Message::new("assistant", text);
        if !calls.is_empty() {
            message.content = if text.is_empty() {
                None
            } else {
                Some(text.to_string())
            };
            message.tool_calls = Some(
                calls
                    .iter()
                    .map(|c| {
                        serde_json::json!({"id": c.id, "type": "function",
                            "function": {"name": c.name, "arguments": canonical_json(&c.arguments)}})
                    })
                    .collect(),
            );
        }
        self.messages.push(message);
    }

    /// Forgets every message after the first `len` (never the system prompt): a run that failed or was
    /// aborted leaves the conversation as it found it.
    pub fn truncate(&mut self, len: usize) {
        let keep = usize::from(self.system.is_some());
        self.messages.truncate(len.max(keep));
    }

    /// Records a tool's result (or error) for the call `id`, capped at `max_result_chars`. `omitted` is
    /// the number of characters the caller already cut from the end of a long string (the page does, so
    /// that a 50 MB result never crosses into wasm); the note counts them.
    pub fn push_tool_result(&mut self, id: &str, name: &str, result: &Value, omitted: usize) {
        self.push_result_text(id, name, result_text(result), omitted);
    }

    /// The same, with the result also cut to at most `max_tokens` tokens of `tokenizer`: the context is
    /// measured in tokens, and characters per token vary several-fold between texts and tokenizers.
    pub fn push_tool_result_within(
        &mut self,
        id: &str,
        name: &str,
        result: &Value,
        omitted: usize,
        tokenizer: &Tokenizer,
        max_tokens: usize,
    ) -> Result<()> {
        let text = result_text(result);
        let ids = tokenizer.encode(&text)?;
        if ids.len() <= max_tokens {
            self.push_result_text(id, name, text, omitted);
            return Ok(());
        }
        // A cut inside a character's bytes decodes to U+FFFD: that piece goes too.
        let kept = tokenizer.decode(&ids[..max_tokens])?;
        let kept = kept.trim_end_matches('\u{FFFD}');
        let cut = text.chars().count().saturating_sub(kept.chars().count());
        self.push_result_text(id, name, kept.to_string(), omitted + cut);
        Ok(())
    }

    fn push_result_text(&mut self, id: &str, name: &str, text: String, omitted: usize) {
        let kept: String = text.chars().take(self.max_result_chars).collect();
        let cut = text.chars().count() - kept.chars().count() + omitted;
        let content = if cut > 0 {
            format!("{kept}\n[truncated: {cut} more characters not shown]")
        } else {
            kept
        };
        let mut message = Message::new("tool", &content);
        message.tool_call_id = Some(id.to_string());
        message.name = Some(name.to_string());
        self.messages.push(message);
    }
}

/// A tool result as the prompt shows it: a string as it is, any other value as canonical JSON.
fn result_text(result: &Value) -> String {
    match result {
        Value::String(s) => s.clone(),
        other => canonical_json(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_json_matches_python_json_dumps() {
        let v = json!({"city": "Zürich", "n": [1, 2.5, true, null], "o": {"a": "\"q\""}});
        assert_eq!(
            canonical_json(&v),
            r#"{"city": "Zürich", "n": [1, 2.5, true, null], "o": {"a": "\"q\""}}"#
        );
    }

    #[test]
    fn results_are_tool_messages_and_are_capped() {
        let mut c = Conversation::new(Some("sys".into()), ToolCallFormat::Hermes, 10);
        c.push_user("hi");
        c.push_assistant(
            "",
            &[RecordedCall {
                id: "call_0".into(),
                name: "f".into(),
                arguments: json!({"x": 1}),
            }],
        );
        c.push_tool_result("call_0", "f", &json!("0123456789abcdef"), 0);
        let last = c.messages.last().unwrap();
        assert_eq!(last.role, "tool");
        assert_eq!(
            last.content.as_deref(),
            Some("0123456789\n[truncated: 6 more characters not shown]")
        );
        assert_eq!(c.messages[2].content, None);
        assert_eq!(
            c.messages[2].tool_calls.as_ref().unwrap()[0]["function"]["arguments"],
            json!("{\"x\": 1}")
        );
        c.push_tool_result("call_1", "f", &json!("0123456789"), 5);
        assert_eq!(
            c.messages.last().unwrap().content.as_deref(),
            Some("0123456789\n[truncated: 5 more characters not shown]")
        );
        c.truncate(0);
        assert_eq!(c.messages.len(), 1, "the system prompt stays");
        c.push_user("again");
        c.reset();
        assert_eq!(c.messages.len(), 1);
        assert_eq!(c.messages[0].role, "system");
    }

    #[test]
    fn results_are_cut_to_a_number_of_tokens() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/models/wisp-mini/tokenizer.json"
        );
        let tokenizer = Tokenizer::from_json(&std::fs::read(path).unwrap()).unwrap();
        let mut c = Conversation::new(None, ToolCallFormat::Hermes, usize::MAX);
        for text in [
            "Zürich, Łódź and São Paulo are cities. ".repeat(40),
            "🙂é".repeat(300),
        ] {
            c.push_tool_result_within("call_0", "f", &json!(text), 0, &tokenizer, 30)
                .unwrap();
            let content = c.messages.last().unwrap().content.clone().unwrap();
            let (kept, note) = content.split_once("\n[truncated: ").unwrap();
            assert!(text.starts_with(kept), "{kept:?}");
            assert!(tokenizer.encode(kept).unwrap().len() <= 30);
            let cut = text.chars().count() - kept.chars().count();
            assert_eq!(note, format!("{cut} more characters not shown]"));
        }
        // A result that fits is kept whole, and characters the page already cut are still counted.
        c.push_tool_result_within("call_1", "f", &json!({"ok": true}), 0, &tokenizer, 30)
            .unwrap();
        assert_eq!(
            c.messages.last().unwrap().content.as_deref(),
            Some("{\"ok\": true}")
        );
        c.push_tool_result_within("call_2", "f", &json!("abc"), 7, &tokenizer, 30)
            .unwrap();
        assert_eq!(
            c.messages.last().unwrap().content.as_deref(),
            Some("abc\n[truncated: 7 more characters not shown]")
        );
    }
}
