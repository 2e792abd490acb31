//! The agent's conversation: the messages so far, the registered tools, and how tool calls and results are
//! written back into it. Tool results and page content only ever enter as tool messages, never as system
//! text, and they are capped in size.

use serde::Serialize;
use serde_json::Value;

use super::{ToolCallFormat, ToolRegistry};
use crate::error::{Result, WispError};
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
    /// Most tokens the prompt may carry besides the system message and the tools (`fit` trims to it): a
    /// small model may follow a long history worse than its context allows.
    pub max_history_tokens: usize,
}

impl Conversation {
    pub fn new(system: Option<String>, format: ToolCallFormat, max_result_chars: usize) -> Self {
        let mut c = Conversation {
            messages: Vec::new(),
            tools: ToolRegistry::new(),
            format,
            system,
            max_result_chars,
            max_history_tokens: usize::MAX,
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

/// Characters an old tool result keeps when the context is short: enough for the model to see what it was.
const SHORTENED_RESULT_CHARS: usize = 100;

/// Where the context goes, in tokens of the model's tokenizer: the system message with the tools, the
/// rest of the prompt (the history and the assistant's opener), and what is left for the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextUsage {
    pub capacity: usize,
    pub system_and_tools: usize,
    pub history: usize,
    pub free: usize,
    /// Room the next message wants for its answer (`fit` trims until the prompt leaves this much).
    pub reserve: usize,
    /// Whether the prompt leaves `reserve` free.
    pub fits: bool,
}

/// What `fit` cut to make room: whole messages dropped, old tool results shortened, tokens gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Trim {
    pub messages: usize,
    pub shortened: usize,
    pub tokens: usize,
}

impl Conversation {
    /// Tokens of the prompt for the next assistant message.
    pub fn prompt_tokens(&self, template: &ChatTemplate, tokenizer: &Tokenizer) -> Result<usize> {
        Ok(tokenizer.encode(&self.prompt(template)?)?.len())
    }

    /// The tokens every prompt of this conversation begins with, whatever its history and next message:
    /// the system message and the tools, as far as two different user messages after them share tokens.
    pub fn prefix_ids(&self, template: &ChatTemplate, tokenizer: &Tokenizer) -> Result<Vec<u32>> {
        let tools = (!self.tools.is_empty()).then(|| self.tools.openai_tools());
        let probe = |text: &str| -> Result<Vec<u32>> {
            let mut messages = self.messages[..usize::from(self.system.is_some())].to_vec();
            messages.push(Message::new("user", text));
            tokenizer.encode(&super::render_chat(
                template,
                &messages,
                tools.as_ref(),
                true,
            )?)
        };
        let (a, b) = (probe("a")?, probe("b")?);
        Ok(a.into_iter()
            .zip(b)
            .take_while(|(x, y)| x == y)
            .map(|(x, _)| x)
            .collect())
    }

    /// Tokens of the system message with the tools: the prompt's part that no trim touches.
    fn fixed_tokens(&self, template: &ChatTemplate, tokenizer: &Tokenizer) -> Result<usize> {
        let tools = (!self.tools.is_empty()).then(|| self.tools.openai_tools());
        let head = &self.messages[..usize::from(self.system.is_some())];
        let render = |messages: &[Message], generation: bool| -> Result<Vec<u32>> {
            tokenizer.encode(&super::render_chat(
                template,
                messages,
                tools.as_ref(),
                generation,
            )?)
        };
        match render(head, false) {
            Ok(ids) => Ok(ids.len()),
            // A template that refuses a conversation without a user message: the tokens two different
            // user messages share.
            Err(_) => {
                let probe = |text: &str| {
                    let mut messages = head.to_vec();
                    messages.push(Message::new("user", text));
                    render(&messages, true)
                };
                let (a, b) = (probe("a")?, probe("b")?);
                Ok(a.iter().zip(&b).take_while(|(x, y)| x == y).count())
            }
        }
    }

    /// The answer's room: the request's `max_tokens`, but never more than a quarter of the context, so
    /// that a large budget does not empty the history.
    fn reserve(capacity: usize, max_tokens: usize) -> usize {
        max_tokens.min(capacity / 4).max(1)
    }

    /// How the context of `capacity` tokens is used by the prompt of the next message.
    pub fn usage(
        &self,
        template: &ChatTemplate,
        tokenizer: &Tokenizer,
        capacity: usize,
        max_tokens: usize,
    ) -> Result<ContextUsage> {
        let total = self.prompt_tokens(template, tokenizer)?;
        let fixed = self.fixed_tokens(template, tokenizer)?.min(total);
        let reserve = Self::reserve(capacity, max_tokens);
        Ok(ContextUsage {
            capacity,
            system_and_tools: fixed,
            history: total - fixed,
            free: capacity.saturating_sub(total),
            reserve,
            fits: total + reserve <= capacity && total - fixed <= self.max_history_tokens,
        })
    }

    /// Where each exchange starts: the index of each user message. The last one is the current exchange,
    /// which is never cut.
    fn exchange_starts(&self) -> Vec<usize> {
        (0..self.messages.len())
            .filter(|&i| self.messages[i].role == "user")
            .collect()
    }

    /// Makes the prompt of the next message leave room for its answer (see `reserve`): first by shortening
    /// the tool results of earlier exchanges, if that is enough, otherwise by dropping whole exchanges,
    /// oldest first, after the system message. The tokens before the cut stay as they were, so the cache
    /// keeps them. `None` when the prompt already fits; `CONTEXT_OVERFLOW`, with nothing changed, when
    /// even the current exchange alone leaves no room for one new token.
    pub fn fit(
        &mut self,
        template: &ChatTemplate,
        tokenizer: &Tokenizer,
        capacity: usize,
        max_tokens: usize,
    ) -> Result<Option<Trim>> {
        let before = self.prompt_tokens(template, tokenizer)?;
        let mut target = capacity.saturating_sub(Self::reserve(capacity, max_tokens));
        if self.max_history_tokens < target {
            let fixed = self.fixed_tokens(template, tokenizer)?;
            target = target.min(fixed.saturating_add(self.max_history_tokens));
        }
        if before <= target {
            return Ok(None);
        }
        let starts = self.exchange_starts();
        let current = starts.last().copied().unwrap_or(self.messages.len());
        let head = usize::from(self.system.is_some()).min(current);
        let original = self.messages.clone();

        let mut shortened = 0;
        for message in &mut self.messages[..current] {
            if message.role != "tool" {
                continue;
            }
            let Some(content) = &message.content else {
                continue;
            };
            let total = content.chars().count();
            if total > SHORTENED_RESULT_CHARS {
                let kept: String = content.chars().take(SHORTENED_RESULT_CHARS).collect();
                let cut = total - SHORTENED_RESULT_CHARS;
                message.content = Some(format!(
                    "{kept}\n[shortened: {cut} more characters not shown]"
                ));
                shortened += 1;
            }
        }
        if shortened > 0 {
            let now = self.prompt_tokens(template, tokenizer)?;
            if now <= target {
                return Ok(Some(Trim {
                    messages: 0,
                    shortened,
                    tokens: before - now,
                }));
            }
        }

        // Drop the exchanges before each later start in turn; the last candidate keeps only the current one.
        let mut best = None;
        for &from in starts.iter().filter(|&&s| s > head) {
            self.messages = original[..head].to_vec();
            self.messages.extend_from_slice(&original[from..]);
            let now = self.prompt_tokens(template, tokenizer)?;
            best = Some((from, now));
            if now <= target {
                break;
            }
        }
        match best {
            Some((from, now)) if now < capacity => {
                self.messages = original[..head].to_vec();
                self.messages.extend_from_slice(&original[from..]);
                Ok(Some(Trim {
                    messages: from - head,
                    shortened: 0,
                    tokens: before.saturating_sub(now),
                }))
            }
            _ => {
                let least = best.map_or(before, |(_, now)| now);
                self.messages = original;
                Err(WispError::ContextOverflow(format!(
                    "the prompt has {least} tokens; the context holds {capacity} including the answer \
                     (only the current message is left besides the system message and the tools)")))
            }
        }
    }

    /// Replaces the messages after the system message (a page's context policy, or a run undone). Each
    /// must have a role the templates show and the fields its role needs.
    pub fn set_history(&mut self, history: Vec<Message>) -> Result<()> {
        for (i, m) in history.iter().enumerate() {
            let ok = match m.role.as_str() {
                "user" => m.content.is_some(),
                "assistant" => m.content.is_some() || m.tool_calls.is_some(),
                "tool" => m.content.is_some() && m.tool_call_id.is_some(),
                _ => false,
            };
            if !ok {
                return Err(WispError::InvalidRequest(format!(
                    "message {i} is not a user, assistant or tool message with its fields (role {:?})",
                    m.role
                )));
            }
        }
        self.reset();
        self.messages.extend(history);
        Ok(())
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

    fn bundled() -> (ChatTemplate, Tokenizer) {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/models/wisp-mini/");
        let read = |name: &str| std::fs::read(format!("{dir}{name}")).unwrap();
        let tokenizer = Tokenizer::from_json(&read("tokenizer.json")).unwrap();
        let template = ChatTemplate::new(&String::from_utf8(read("chat_template.jinja")).unwrap())
            .unwrap()
            .protect(tokenizer.added_tokens());
        (template, tokenizer)
    }

    /// A conversation of `n` finished exchanges (a question, a call, its result, an answer) and a new
    /// question, with one tool registered.
    fn long_conversation(n: usize, result: &str) -> Conversation {
        let mut c = Conversation::new(
            Some("You are a helpful assistant.".into()),
            ToolCallFormat::Hermes,
            usize::MAX,
        );
        c.tools
            .register(crate::agent::ToolSpec {
                name: "get_weather".into(),
                description: "Get the weather for a city.".into(),
                parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            })
            .unwrap();
        for i in 0..n {
            c.push_user(&format!("What's the weather in city {i}?"));
            let call = RecordedCall {
                id: format!("call_{i}"),
                name: "get_weather".into(),
                arguments: json!({"city": format!("city {i}")}),
            };
            c.push_assistant("", &[call]);
            c.push_tool_result(&format!("call_{i}"), "get_weather", &json!(result), 0);
            c.push_assistant(&format!("It is sunny in city {i}."), &[]);
        }
        c.push_user("And in Paris?");
        c
    }

    fn ids(c: &Conversation, template: &ChatTemplate, tokenizer: &Tokenizer) -> Vec<u32> {
        tokenizer.encode(&c.prompt(template).unwrap()).unwrap()
    }

    #[test]
    fn usage_adds_up_and_a_prompt_that_fits_is_left_alone() {
        let (template, tokenizer) = bundled();
        let mut c = long_conversation(2, "sunny, 18 C");
        let total = c.prompt_tokens(&template, &tokenizer).unwrap();
        let u = c.usage(&template, &tokenizer, 1024, 256).unwrap();
        assert_eq!(u.system_and_tools + u.history, total);
        assert_eq!(u.free, 1024 - total);
        assert_eq!(u.reserve, 256);
        assert!(u.fits);
        // The system message with the tools is where every prompt of this conversation starts.
        let all = ids(&c, &template, &tokenizer);
        let mut bare = Conversation::new(
            Some("You are a helpful assistant.".into()),
            ToolCallFormat::Hermes,
            usize::MAX,
        );
        bare.tools = std::mem::take(&mut c.tools);
        bare.push_user("Hi");
        assert!(u.system_and_tools > 50);
        assert_eq!(
            all[..u.system_and_tools],
            ids(&bare, &template, &tokenizer)[..u.system_and_tools]
        );
        c.tools = std::mem::take(&mut bare.tools);
        let before = c.messages.clone();
        assert_eq!(c.fit(&template, &tokenizer, 1024, 256).unwrap(), None);
        assert_eq!(c.messages, before);
    }

    #[test]
    fn every_prompt_begins_with_the_prefix() {
        let (template, tokenizer) = bundled();
        let c = long_conversation(2, "sunny, 18 C");
        let prefix = c.prefix_ids(&template, &tokenizer).unwrap();
        let fixed = c
            .usage(&template, &tokenizer, 1024, 256)
            .unwrap()
            .system_and_tools;
        // The system message with the tools, and the opener of the first user message.
        assert!(prefix.len() >= fixed, "{} < {fixed}", prefix.len());
        assert!(ids(&c, &template, &tokenizer).starts_with(&prefix));
        let fresh = long_conversation(0, "");
        assert_eq!(fresh.prefix_ids(&template, &tokenizer).unwrap(), prefix);
        // Another system message is another prefix.
        let mut other = long_conversation(0, "");
        other.messages[0].content = Some("You are terse.".into());
        assert!(!ids(&c, &template, &tokenizer)
            .starts_with(&other.prefix_ids(&template, &tokenizer).unwrap()));
    }

    #[test]
    fn old_tool_results_are_shortened_when_that_is_enough() {
        let (template, tokenizer) = bundled();
        let long = "sunny and warm with a light breeze from the west. ".repeat(8);
        let mut c = long_conversation(1, &long);
        let total = c.prompt_tokens(&template, &tokenizer).unwrap();
        // Room for the answer (16 tokens) is missing by a few tokens.
        let capacity = total + 16 - 10;
        let trim = c.fit(&template, &tokenizer, capacity, 16).unwrap().unwrap();
        assert_eq!((trim.messages, trim.shortened), (0, 1));
        let now = c.prompt_tokens(&template, &tokenizer).unwrap();
        assert_eq!(trim.tokens, total - now);
        assert!(now + 16 <= capacity);
        let result = c.messages[3].content.as_deref().unwrap();
        assert!(result.starts_with(&long[..SHORTENED_RESULT_CHARS]));
        assert!(result.ends_with(&format!(
            "[shortened: {} more characters not shown]",
            long.len() - SHORTENED_RESULT_CHARS
        )));
        assert_eq!(c.messages.len(), 6, "no message was dropped");
    }

    #[test]
    fn the_oldest_whole_exchanges_go_and_the_cached_prefix_stays() {
        let (template, tokenizer) = bundled();
        let mut c = long_conversation(12, "sunny, 18 C");
        let before = ids(&c, &template, &tokenizer);
        let fixed = c
            .usage(&template, &tokenizer, 1024, 256)
            .unwrap()
            .system_and_tools;
        assert!(before.len() > 1024 - 256, "{} tokens", before.len());
        let current = c.messages.last().unwrap().clone();
        let trim = c.fit(&template, &tokenizer, 1024, 256).unwrap().unwrap();
        assert_eq!(trim.shortened, 0);
        assert_eq!(trim.messages % 4, 0, "whole exchanges: {}", trim.messages);
        assert_eq!(c.messages.len(), 1 + 12 * 4 + 1 - trim.messages);
        assert_eq!(c.messages[0].role, "system");
        assert_eq!(
            c.messages[1].content.as_deref(),
            Some(format!("What's the weather in city {}?", trim.messages / 4).as_str())
        );
        assert_eq!(c.messages.last().unwrap(), &current);
        let after = ids(&c, &template, &tokenizer);
        assert!(after.len() + 256 <= 1024);
        assert_eq!(trim.tokens, before.len() - after.len());
        // One exchange fewer cut would not fit: the cut is as small as it can be.
        let mut less = long_conversation(12, "sunny, 18 C");
        let keep = less.messages[1 + trim.messages - 4..].to_vec();
        less.set_history(keep).unwrap();
        assert!(less.prompt_tokens(&template, &tokenizer).unwrap() + 256 > 1024);
        // The prompts agree up to the cut: the system message and the tools stay cached.
        let common = before
            .iter()
            .zip(&after)
            .take_while(|(a, b)| a == b)
            .count();
        assert!(common >= fixed, "{common} < {fixed}");
    }

    #[test]
    fn a_history_limit_cuts_earlier() {
        let (template, tokenizer) = bundled();
        let mut c = long_conversation(4, "sunny, 18 C");
        assert_eq!(c.fit(&template, &tokenizer, 1024, 64).unwrap(), None);
        c.max_history_tokens = 120;
        assert!(!c.usage(&template, &tokenizer, 1024, 64).unwrap().fits);
        let trim = c.fit(&template, &tokenizer, 1024, 64).unwrap().unwrap();
        assert!(trim.messages >= 4 && trim.messages % 4 == 0, "{trim:?}");
        let u = c.usage(&template, &tokenizer, 1024, 64).unwrap();
        assert!(u.fits && u.history <= 120, "{u:?}");
    }

    #[test]
    fn a_message_too_long_for_the_context_overflows_and_changes_nothing() {
        let (template, tokenizer) = bundled();
        let mut c = long_conversation(3, "sunny, 18 C");
        c.push_assistant("Sure.", &[]);
        c.push_user(&"tell me about the weather ".repeat(300));
        let before = c.messages.clone();
        let e = c.fit(&template, &tokenizer, 1024, 256).unwrap_err();
        assert_eq!(e.code(), "CONTEXT_OVERFLOW", "{e}");
        assert_eq!(c.messages, before);
    }

    #[test]
    fn a_replaced_history_is_checked() {
        let mut c = long_conversation(1, "x");
        let bad = vec![Message {
            role: "robot".into(),
            ..Message::new("user", "hi")
        }];
        assert_eq!(c.set_history(bad).unwrap_err().code(), "INVALID_REQUEST");
        let mut tool = Message::new("tool", "42");
        tool.tool_call_id = None;
        assert_eq!(
            c.set_history(vec![tool]).unwrap_err().code(),
            "INVALID_REQUEST"
        );
        c.set_history(vec![
            Message::new("user", "Summary: it was sunny."),
            Message::new("user", "hi"),
        ])
        .unwrap();
        assert_eq!(c.messages.len(), 3);
        assert_eq!(c.messages[0].role, "system");
    }
}
