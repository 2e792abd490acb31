//! Finding tool calls in a model's streamed output. The parser only reports what it sees: it never runs a
//! tool, and it never checks arguments against a schema (that is the registry's job).

use serde_json::{Map, Value};

const HERMES_OPEN: &str = "<tool_call>";
const HERMES_CLOSE: &str = "</tool_call>";
const PYTHON_TAG: &str = "<|python_tag|>";

/// How a model family writes tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolCallFormat {
    /// Qwen2.5, Qwen3, Hermes and our bundled model: any number of
    /// `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`, with text around them.
    Hermes,
    /// Llama 3.x: the whole assistant message is `{"name": ..., "parameters": {...}}` (or `"arguments"`),
    /// possibly after `<|python_tag|>`.
    Llama3Json,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ParseEvent {
    /// Text to show as it arrives. Deltas come out in pieces, so consecutive `Text` events belong together.
    Text(String),
    /// A call has begun: its body is still streaming (a UI can say "calling a tool...").
    ToolCallStarted,
    /// A complete, well-formed call. `arguments` is always a JSON object.
    ToolCall {
        id: String,
        name: String,
        arguments: Value,
    },
    /// A call that cannot be used: `raw` is its body as the model wrote it (without tags), `error` says why.
    Invalid { raw: String, error: String },
}

/// A streaming parser for one format. Ids (`call_0`, `call_1`, ...) count valid calls over the parser's
/// whole life, so one parser per conversation gives ids that stay unique across turns.
#[derive(Debug)]
pub struct ToolCallParser {
    format: ToolCallFormat,
    state: State,
    /// Received but not yet reported: a possible start of a tag, undecided leading text, or a call's body.
    pending: String,
    next_id: usize,
}

#[derive(Debug, Clone, Copy)]
enum State {
    /// Text, watching for `<tool_call>`.
    HermesText,
    /// Inside `<tool_call>`, waiting for `</tool_call>`.
    HermesCall,
    /// Only whitespace so far (and `;` between calls), so it is still open whether a call follows.
    LlamaLead { after_call: bool },
    /// Inside a JSON call, waiting for its object to close.
    LlamaCall(ObjectEnd),
    /// The message is not a call: everything from here on is text.
    LlamaText,
}

impl ToolCallParser {
    pub fn new(format: ToolCallFormat) -> Self {
        Self {
            format,
            state: Self::initial_state(format),
            pending: String::new(),
            next_id: 0,
        }
    }

    /// Feeds the next piece of the model's output and returns what it settled.
    pub fn push(&mut self, delta: &str) -> Vec<ParseEvent> {
        self.pending.push_str(delta);
        let mut events = Vec::new();
        while self.step(&mut events) {}
        events
    }

    /// Ends the message: held-back text is released, and a call that never closed is reported as
    /// `Invalid`. The parser is then ready for the next message.
    pub fn finish(&mut self) -> Vec<ParseEvent> {
        let rest = std::mem::take(&mut self.pending);
        let mut events = Vec::new();
        match self.state {
            State::HermesText | State::LlamaLead { .. } | State::LlamaText => {
                push_text(&mut events, &rest)
            }
            State::HermesCall => events.push(ParseEvent::Invalid {
                raw: rest.trim().to_string(),
                error: format!("the tool call was not closed with {HERMES_CLOSE}"),
            }),
            State::LlamaCall(end) => events.push(ParseEvent::Invalid {
                raw: rest.trim().to_string(),
                error: if end.broken {
                    "a tool call must be a JSON object".to_string()
                } else {
                    "the tool call's JSON object was not closed".to_string()
                },
            }),
        }
        self.state = Self::initial_state(self.format);
        events
    }

    fn initial_state(format: ToolCallFormat) -> State {
        match format {
            ToolCallFormat::Hermes => State::HermesText,
            ToolCallFormat::Llama3Json => State::LlamaLead { after_call: false },
        }
    }

    /// Settles what `pending` allows in the current state; true when the state changed and the rest of
    /// `pending` needs another look.
    fn step(&mut self, events: &mut Vec<ParseEvent>) -> bool {
        match self.state {
            State::HermesText => {
                if let Some(at) = self.pending.find(HERMES_OPEN) {
                    push_text(events, &self.pending[..at]);
                    self.pending.drain(..at + HERMES_OPEN.len());
                    events.push(ParseEvent::ToolCallStarted);
                    self.state = State::HermesCall;
                    return true;
                }
                // Hold back what could still grow into `<tool_call>`, so a tag never shows as text.
                let shown = self.pending.len() - partial_tag_len(&self.pending, HERMES_OPEN);
                push_text(events, &self.pending[..shown]);
                self.pending.drain(..shown);
                false
            }
            State::HermesCall => {
                let Some(at) = hermes_close(&self.pending) else {
                    return false;
                };
                let body: String = self.pending.drain(..at + HERMES_CLOSE.len()).collect();
                let event = self.call(body[..at].trim());
                events.push(event);
                self.state = State::HermesText;
                true
            }
            State::LlamaLead { after_call } => {
                let body = self
                    .pending
                    .trim_start_matches(|c: char| c.is_whitespace() || (after_call && c == ';'));
                let skipped = self.pending.len() - body.len();
                if body.starts_with(PYTHON_TAG) {
                    self.pending.drain(..skipped + PYTHON_TAG.len());
                } else if body.starts_with('{') {
                    self.pending.drain(..skipped);
                } else if PYTHON_TAG.starts_with(body) {
                    // Nothing but whitespace, or a piece of `<|python_tag|>`: wait for more.
                    return false;
                } else {
                    self.state = State::LlamaText;
                    return true;
                }
                events.push(ParseEvent::ToolCallStarted);
                self.state = State::LlamaCall(ObjectEnd::default());
                true
            }
            State::LlamaCall(mut end) => {
                let found = end.scan(&self.pending);
                self.state = State::LlamaCall(end);
                let Some(len) = found else {
                    return false;
                };
                let body: String = self.pending.drain(..len).collect();
                let event = self.call(body.trim());
                events.push(event);
                self.state = State::LlamaLead { after_call: true };
                true
            }
            State::LlamaText => {
                push_text(events, &self.pending);
                self.pending.clear();
                false
            }
        }
    }

    fn call(&mut self, raw: &str) -> ParseEvent {
        match parse_call(raw) {
            Ok((name, arguments)) => {
                let id = format!("call_{}", self.next_id);
                self.next_id += 1;
                ParseEvent::ToolCall {
                    id,
                    name,
                    arguments,
                }
            }
            Err(error) => ParseEvent::Invalid {
                raw: raw.to_string(),
                error,
            },
        }
    }
}

/// Where a Hermes call's body ends: the first `</tool_call>` outside the call's JSON strings. The tag is
/// plain text to a JSON string, so the tool-call grammar lets a model write it inside an argument
/// (`{"text": "a</tool_call>b"}`), and cutting there would turn a schema-valid call into broken JSON.
/// After the object closes, or when the body is not a JSON object, the first tag ends the call.
fn hermes_close(body: &str) -> Option<usize> {
    let mut end = ObjectEnd::default();
    let mut from = 0;
    while let Some(found) = body[from..].find(HERMES_CLOSE) {
        let at = from + found;
        if end.scan(&body[..at]).is_some() || !end.in_string {
            return Some(at);
        }
        from = at + HERMES_CLOSE.len();
    }
    None
}

/// Finds where a JSON object ends without parsing it (depth outside strings), so a Llama 3 call is
/// reported as soon as it closes rather than at the end of the message.
#[derive(Debug, Clone, Copy, Default)]
struct ObjectEnd {
    /// Bytes of the call's text already looked at.
    scanned: usize,
    depth: usize,
    opened: bool,
    in_string: bool,
    escaped: bool,
    /// Something other than `{` came first: not a JSON call, so the rest of the message is its body.
    broken: bool,
}

impl ObjectEnd {
    /// Continues over `text` (the call's text so far); returns its length up to the closing brace.
    /// Bytes suffice: every byte that matters is ASCII, and UTF-8 never uses ASCII bytes inside a char.
    fn scan(&mut self, text: &str) -> Option<usize> {
        let bytes = text.as_bytes();
        while self.scanned < bytes.len() && !self.broken {
            let byte = bytes[self.scanned];
            self.scanned += 1;
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if byte == b'\\' {
                    self.escaped = true;
                } else if byte == b'"' {
                    self.in_string = false;
                }
                continue;
            }
            if !self.opened {
                match byte {
                    b'{' => {
                        self.opened = true;
                        self.depth = 1;
                    }
                    _ if byte.is_ascii_whitespace() => {}
                    _ => self.broken = true,
                }
                continue;
            }
            match byte {
                b'"' => self.in_string = true,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        return Some(self.scanned);
                    }
                }
                _ => {}
            }
        }
        None
    }
}

/// Reads `{"name": ..., "arguments": {...}}`, also accepting Llama's `"parameters"`. Missing arguments
/// mean none: models drop the key for tools that take no parameters.
fn parse_call(raw: &str) -> Result<(String, Value), String> {
    let value: Value = serde_json::from_str(raw)
        .map_err(|error| format!("the tool call is not valid JSON: {error}"))?;
    let Value::Object(mut call) = value else {
        return Err("a tool call must be a JSON object".to_string());
    };
    let name = match call.remove("name") {
        Some(Value::String(name)) if !name.trim().is_empty() => name,
        Some(_) => return Err("the tool call's \"name\" must be a non-empty string".to_string()),
        None => return Err("the tool call has no \"name\"".to_string()),
    };
    match call
        .remove("arguments")
        .or_else(|| call.remove("parameters"))
    {
        None => Ok((name, Value::Object(Map::new()))),
        Some(arguments @ Value::Object(_)) => Ok((name, arguments)),
        Some(other) => Err(format!(
            "the tool call's arguments must be a JSON object, not {other}"
        )),
    }
}

/// The length of the longest end of `text` that is a proper start of `tag`.
fn partial_tag_len(text: &str, tag: &str) -> usize {
    (1..tag.len())
        .rev()
        .find(|&len| text.ends_with(&tag[..len]))
        .unwrap_or(0)
}

fn push_text(events: &mut Vec<ParseEvent>, text: &str) {
    if !text.is_empty() {
        events.push(ParseEvent::Text(text.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use ParseEvent::*;

    /// Feeds `deltas` then finishes, merging consecutive text (its chunking depends on the deltas).
    fn run(format: ToolCallFormat, deltas: &[&str]) -> Vec<ParseEvent> {
        let mut parser = ToolCallParser::new(format);
        let mut events: Vec<ParseEvent> =
            deltas.iter().flat_map(|delta| parser.push(delta)).collect();
        events.extend(parser.finish());
        let mut merged: Vec<ParseEvent> = Vec::new();
        for event in events {
            match (merged.last_mut(), event) {
                (Some(Text(previous)), Text(more)) => previous.push_str(&more),
                (_, event) => merged.push(event),
            }
        }
        merged
    }

    fn whole(format: ToolCallFormat, transcript: &str) -> Vec<ParseEvent> {
        run(format, &[transcript])
    }

    /// The same events whatever the deltas: split once at every byte offset (those inside a char cannot
    /// be a `&str` boundary), then char by char.
    fn assert_split_invariant(format: ToolCallFormat, transcript: &str) {
        let expected = whole(format, transcript);
        for at in (1..transcript.len()).filter(|&at| transcript.is_char_boundary(at)) {
            let (a, b) = transcript.split_at(at);
            assert_eq!(
                run(format, &[a, b]),
                expected,
                "split at byte {at}: {a:?} | {b:?}"
            );
        }
        let chars: Vec<String> = transcript.chars().map(String::from).collect();
        let pieces: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(run(format, &pieces), expected, "char by char");
    }

    fn call(id: &str, name: &str, arguments: Value) -> ParseEvent {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }

    fn text(s: &str) -> ParseEvent {
        Text(s.into())
    }

    const HERMES_TWO_CALLS: &str = "Let me check both cities.\n<tool_call>\n{\"name\": \"get_weather\", \
        \"arguments\": {\"city\": \"Zürich\", \"note\": \"naïve 東京 🌧 \\\"quoted\\\" {brace}\"}}\n</tool_call>\n\
        <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>\nDone <tool";

    #[test]
    fn hermes_single_call() {
        let events = whole(
            ToolCallFormat::Hermes,
            "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>",
        );
        assert_eq!(
            events,
            vec![ToolCallStarted, call("call_0", "now", json!({}))]
        );
    }

    #[test]
    fn hermes_several_calls_with_text_around_and_unicode() {
        let events = whole(ToolCallFormat::Hermes, HERMES_TWO_CALLS);
        assert_eq!(
            events,
            vec![
                text("Let me check both cities.\n"),
                ToolCallStarted,
                call(
                    "call_0",
                    "get_weather",
                    json!({"city": "Zürich", "note": "naïve 東京 🌧 \"quoted\" {brace}"})
                ),
                text("\n"),
                ToolCallStarted,
                call("call_1", "get_weather", json!({"city": "Oslo"})),
                text("\nDone <tool"),
            ]
        );
    }

    #[test]
    fn hermes_events_do_not_depend_on_how_the_stream_is_split() {
        assert_split_invariant(ToolCallFormat::Hermes, HERMES_TWO_CALLS);
        assert_split_invariant(
            ToolCallFormat::Hermes,
            "a<tool_call>{\"name\": 1}</tool_call>b<tool_call>{\"name\": \"x\"",
        );
        assert_split_invariant(
            ToolCallFormat::Hermes,
            "<<tool_call<tool_call>{\"name\":\"é\"}</tool_call></tool_call>",
        );
    }

    #[test]
    fn hermes_holds_back_a_possible_tag_and_no_more() {
        let mut parser = ToolCallParser::new(ToolCallFormat::Hermes);
        assert_eq!(parser.push("Sure. <tool_c"), vec![text("Sure. ")]);
        assert_eq!(parser.push("all>{\"name\": \"a\"}"), vec![ToolCallStarted]);
        assert_eq!(parser.push("</tool_"), vec![]);
        assert_eq!(parser.push("call>"), vec![call("call_0", "a", json!({}))]);
        assert_eq!(
            parser.push("x <b>bold</b> <tool_cat>"),
            vec![text("x <b>bold</b> <tool_cat>")]
        );
        assert_eq!(parser.push("<"), vec![]);
        assert_eq!(parser.finish(), vec![text("<")]);
    }

    #[test]
    fn hermes_malformed_calls_are_reported_and_parsing_goes_on() {
        let events = whole(
            ToolCallFormat::Hermes,
            "<tool_call>{\"name\": \"a\", \"arguments\": {\"x\": }</tool_call>\
             <tool_call>{\"arguments\": {}}</tool_call>\
             <tool_call>{\"name\": \"b\", \"arguments\": \"{\\\"x\\\": 1}\"}</tool_call>\
             <tool_call>[\"c\"]</tool_call>\
             <tool_call>{\"name\": \"\"}</tool_call>\
             <tool_call>{\"name\": \"ok\", \"arguments\": {\"x\": 1}}</tool_call>",
        );
        let errors: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                Invalid { error, .. } => Some(error.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(errors.len(), 5, "{events:?}");
        assert!(
            errors[0].starts_with("the tool call is not valid JSON"),
            "{errors:?}"
        );
        assert_eq!(errors[1], "the tool call has no \"name\"");
        assert!(
            errors[2].starts_with("the tool call's arguments must be a JSON object"),
            "{errors:?}"
        );
        assert_eq!(errors[3], "a tool call must be a JSON object");
        assert_eq!(
            errors[4],
            "the tool call's \"name\" must be a non-empty string"
        );
        assert_eq!(
            events[0..2],
            [
                ToolCallStarted,
                Invalid {
                    raw: "{\"name\": \"a\", \"arguments\": {\"x\": }".into(),
                    error: errors[0].into()
                }
            ]
        );
        // Invalid calls use no id: the first valid one is still call_0.
        assert_eq!(events.last(), Some(&call("call_0", "ok", json!({"x": 1}))));
    }

    #[test]
    fn hermes_close_tag_inside_a_json_string_is_text() {
        let transcript = "<tool_call>\n{\"name\": \"add_note\", \"arguments\": {\"text\": \"a</tool_call>b\\\"</tool_call>\"}}\n</tool_call>ok";
        let expected = vec![
            ToolCallStarted,
            call(
                "call_0",
                "add_note",
                json!({"text": "a</tool_call>b\"</tool_call>"}),
            ),
            text("ok"),
        ];
        assert_eq!(whole(ToolCallFormat::Hermes, transcript), expected);
        assert_split_invariant(ToolCallFormat::Hermes, transcript);
        // Outside a string (a malformed body, or text after the object) the first tag still ends the call.
        assert_eq!(
            whole(
                ToolCallFormat::Hermes,
                "<tool_call>{\"name\": \"a\", \"x\": </tool_call>"
            )[1],
            Invalid {
                raw: "{\"name\": \"a\", \"x\":".into(),
                error: parse_call("{\"name\": \"a\", \"x\":").unwrap_err()
            }
        );
        assert_eq!(
            whole(
                ToolCallFormat::Hermes,
                "<tool_call>{\"name\": \"a\"} \"</tool_call>"
            )[1],
            Invalid {
                raw: "{\"name\": \"a\"} \"".into(),
                error: parse_call("{\"name\": \"a\"} \"").unwrap_err()
            }
        );
    }

    #[test]
    fn hermes_unterminated_call_is_invalid_at_finish() {
        let mut parser = ToolCallParser::new(ToolCallFormat::Hermes);
        assert_eq!(
            parser.push("Hi <tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n"),
            vec![text("Hi "), ToolCallStarted]
        );
        assert_eq!(
            parser.finish(),
            vec![Invalid {
                raw: "{\"name\": \"a\", \"arguments\": {}}".into(),
                error: "the tool call was not closed with </tool_call>".into()
            }]
        );
        // Ready for the next message, and ids go on.
        assert_eq!(
            parser.push("<tool_call>{\"name\": \"b\"}</tool_call>"),
            vec![ToolCallStarted, call("call_0", "b", json!({}))]
        );
        assert_eq!(
            parser.push("<tool_call>{\"name\": \"c\"}</tool_call>")[1],
            call("call_1", "c", json!({}))
        );
    }

    #[test]
    fn unknown_formats_are_plain_text() {
        let garbage =
            "</tool_call> {\"name\": \"a\", \"arguments\": {}} <function=a>{}</function> \
                       <|python_tag|>{\"name\": \"a\"} <tool_call";
        assert_eq!(whole(ToolCallFormat::Hermes, garbage), vec![text(garbage)]);
        let prose = "The answer is {\"name\": \"a\"} <tool_call>{\"name\": \"a\"}</tool_call>";
        assert_eq!(whole(ToolCallFormat::Llama3Json, prose), vec![text(prose)]);
        assert_split_invariant(ToolCallFormat::Llama3Json, prose);
        assert_eq!(whole(ToolCallFormat::Llama3Json, " \n"), vec![text(" \n")]);
        assert_eq!(
            whole(ToolCallFormat::Llama3Json, "<|python"),
            vec![text("<|python")]
        );
    }

    #[test]
    fn llama3_with_parameters_and_with_arguments() {
        assert_eq!(
            whole(
                ToolCallFormat::Llama3Json,
                "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}"
            ),
            vec![
                ToolCallStarted,
                call("call_0", "get_weather", json!({"city": "Oslo"}))
            ]
        );
        assert_eq!(
            whole(
                ToolCallFormat::Llama3Json,
                "\n {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}"
            ),
            vec![
                ToolCallStarted,
                call("call_0", "get_weather", json!({"city": "Oslo"}))
            ]
        );
    }

    const LLAMA_TAGGED: &str = "<|python_tag|>{\"name\": \"search\", \"parameters\": {\"q\": \"}{ \\\" ]\", \
        \"filters\": [{\"lang\": \"日本語\"}]}}; {\"name\": \"now\", \"parameters\": {}}\nThat is all.";

    #[test]
    fn llama3_python_tag_several_calls_and_trailing_text() {
        assert_eq!(
            whole(ToolCallFormat::Llama3Json, LLAMA_TAGGED),
            vec![
                ToolCallStarted,
                call(
                    "call_0",
                    "search",
                    json!({"q": "}{ \" ]", "filters": [{"lang": "日本語"}]})
                ),
                ToolCallStarted,
                call("call_1", "now", json!({})),
                text("\nThat is all."),
            ]
        );
        assert_split_invariant(ToolCallFormat::Llama3Json, LLAMA_TAGGED);
    }

    #[test]
    fn llama3_reports_a_call_as_soon_as_its_object_closes() {
        let mut parser = ToolCallParser::new(ToolCallFormat::Llama3Json);
        assert_eq!(parser.push("  "), vec![]);
        assert_eq!(parser.push("{\"name\": \"a\", "), vec![ToolCallStarted]);
        assert_eq!(parser.push("\"parameters\": {\"x\": [1, {}]}"), vec![]);
        assert_eq!(
            parser.push("}"),
            vec![call("call_0", "a", json!({"x": [1, {}]}))]
        );
        assert_eq!(parser.finish(), vec![]);
    }

    #[test]
    fn llama3_malformed_and_unterminated() {
        assert_eq!(
            whole(
                ToolCallFormat::Llama3Json,
                "{\"name\": \"a\", \"parameters\": [1]}"
            ),
            vec![
                ToolCallStarted,
                Invalid {
                    raw: "{\"name\": \"a\", \"parameters\": [1]}".into(),
                    error: "the tool call's arguments must be a JSON object, not [1]".into()
                }
            ]
        );
        let bad_json = whole(
            ToolCallFormat::Llama3Json,
            "{\"name\": \"a\" \"parameters\": {}}",
        );
        assert!(
            matches!(&bad_json[1], Invalid { error, .. } if error.starts_with("the tool call is not valid JSON"))
        );
        assert_eq!(
            whole(
                ToolCallFormat::Llama3Json,
                "{\"name\": \"a\", \"parameters\": {\"q\": \"}"
            ),
            vec![
                ToolCallStarted,
                Invalid {
                    raw: "{\"name\": \"a\", \"parameters\": {\"q\": \"}".into(),
                    error: "the tool call's JSON object was not closed".into()
                }
            ]
        );
        // Llama 3.1's built-in tools write Python after the tag: not a call this parser can read.
        let python = "<|python_tag|>brave_search.call(query=\"x\")";
        assert_eq!(
            whole(ToolCallFormat::Llama3Json, python),
            vec![
                ToolCallStarted,
                Invalid {
                    raw: "brave_search.call(query=\"x\")".into(),
                    error: "a tool call must be a JSON object".into()
                }
            ]
        );
        assert_split_invariant(ToolCallFormat::Llama3Json, python);
    }
}
