//! Guaranteed-valid tool calls: a grammar of the assistant message, built from the registered tools and the
//! model's tool-call format, that masks the logits so that a call can only name a registered tool and
//! carry arguments that satisfy its parameter schema.
//!
//! The grammar is a Lark grammar for llguidance, with one `%json` schema per tool (llguidance compiles
//! JSON Schema itself). In `auto` mode the text before a call is a lazy lexeme that ends at the call's
//! opener, the pattern llguidance documents for tool calls: the model writes freely until it opens a call,
//! and from there only a complete, valid call can follow. The JSON uses Python's `json.dumps` separators
//! (`", "`, `": "`), the form chat templates render and the bundled model was trained on.

use std::sync::Arc;

use llguidance::api::TopLevelGrammar;
use llguidance::{Matcher, ParserFactory};
use serde::Deserialize;
use serde_json::{json, Value};
use toktrie::{ApproximateTokEnv, SimpleVob, TokRxInfo, TokTrie, TokenizerEnv};

use super::{ToolCallFormat, ToolRegistry};
use crate::error::{Result, WispError};
use crate::generate::LogitsProcessor;
use crate::text::Tokenizer;

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

/// The model's vocabulary as llguidance sees it, and its grammar compiler: built once per model, since
/// building the token trie walks the whole vocabulary.
pub struct GrammarEnv {
    factory: ParserFactory,
    eos: Vec<u32>,
}

impl GrammarEnv {
    /// `vocab_size` is the model's (the logits' length, which may exceed the tokenizer's); `eos` the
    /// tokens that end the message, at least one.
    pub fn new(tokenizer: &Tokenizer, vocab_size: usize, eos: &[u32]) -> Result<Self> {
        let Some(&first_eos) = eos.first() else {
            return Err(WispError::InvalidModel(
                "constrained decoding needs an end-of-turn token".into(),
            ));
        };
        let mut words = llguidance::token_bytes_from_tokenizer_json(&tokenizer.to_json()?)
            .map_err(|e| WispError::InvalidModel(format!("tokenizer: {e}")))?;
        words.resize(words.len().max(vocab_size), Vec::new());
        for &id in eos {
            let word = words.get_mut(id as usize).ok_or_else(|| {
                WispError::InvalidModel(format!("end-of-turn token {id} is outside the vocabulary"))
            })?;
            // llguidance only lets special tokens (marked with 0xFF) end a message; an end token the
            // tokenizer does not call special must not count as text either.
            if word.first() != Some(&TokTrie::SPECIAL_TOKEN_MARKER) {
                let mut marked = vec![TokTrie::SPECIAL_TOKEN_MARKER];
                marked.extend_from_slice(format!("<|wisp_eos_{id}|>").as_bytes());
                *word = marked;
            }
        }
        let info = TokRxInfo::new(words.len() as u32, first_eos);
        let trie = TokTrie::from(&info, &words).with_eos_tokens(eos);
        let env: Arc<dyn TokenizerEnv + Sync> = Arc::new(ApproximateTokEnv::new(trie));
        let mut factory = ParserFactory::new_simple(&env).map_err(grammar_error)?;
        // Problems come back as errors; nothing should go to stderr (which is nowhere on the web).
        factory.quiet().set_stderr_log_level(0);
        Ok(GrammarEnv {
            factory,
            eos: eos.to_vec(),
        })
    }

    fn trie(&self) -> &TokTrie {
        self.factory.tok_env().tok_trie()
    }

    /// How the grammar writes a tag: as the special token when the tokenizer has one by that name (its
    /// bytes could not be produced as text), else as text.
    fn tag(&self, tag: &str) -> String {
        if self.trie().get_special_token(tag).is_some() {
            tag.to_string()
        } else {
            lark_string(tag)
        }
    }

    fn is_special(&self, tag: &str) -> bool {
        self.trie().get_special_token(tag).is_some()
    }
}

fn grammar_error(e: impl std::fmt::Display) -> WispError {
    WispError::ToolGrammar(e.to_string())
}

/// A Lark string literal (JSON's escapes are Lark's).
fn lark_string(text: &str) -> String {
    Value::String(text.to_string()).to_string()
}

/// The Lark grammar of an assistant message: calls to `tools` in `format`, as `choice` allows.
pub fn lark_grammar(
    env: &GrammarEnv,
    tools: &ToolRegistry,
    format: ToolCallFormat,
    choice: &ToolChoice,
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
        let mut schema = spec.parameters.clone();
        bound_numbers(&mut schema);
        if let Value::Object(fields) = &mut schema {
            fields.insert(
                "x-guidance".into(),
                json!({"item_separator": ", ", "key_separator": ": ", "whitespace_flexible": false}),
            );
        }
        let prefix = format!("{{\"name\": \"{name}\", \"{arguments_key}\": ");
        rules.push(format!(
            "tool_{i}: {} %json {schema} \"}}\"",
            lark_string(&prefix)
        ));
        alternatives.push(format!("tool_{i}"));
    }
    if !alternatives.is_empty() {
        rules.push(format!("body: {}", alternatives.join(" | ")));
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
            let start = match choice {
                ToolChoice::None => "TEXT".to_string(),
                ToolChoice::Required | ToolChoice::Named(_) => "call (\"\\n\" call)*".to_string(),
                ToolChoice::Auto => {
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
            let start = match choice {
                ToolChoice::None => "TEXT",
                ToolChoice::Required | ToolChoice::Named(_) => "body (\"; \" body)*",
                ToolChoice::Auto => "body (\"; \" body)* | TEXT",
            };
            rules.push(format!("start: {start}"));
        }
    }
    Ok(rules.join("\n"))
}

/// JSON allows numbers no `f64` holds (`1e999`, or 400 digits), which the call parser (serde_json) and
/// JavaScript cannot read, and endless fractions, which a weak model can loop on until the token budget
/// cuts the call. So, for the grammar only, a numeric schema without a bound gets JavaScript's safe-integer
/// range as that bound (no exponents then, and integers stay exact in JS), and a `number` without
/// `multipleOf` at most 10 decimals (llguidance reads `multipleOf` by repeated `* 10.0`, which 1e-11 does
/// not survive); the arguments still satisfy the page's schema. Walks the subschema keywords only, so that
/// `enum` and `const` values stay as they are.
fn bound_numbers(schema: &mut Value) {
    const SAFE: i64 = (1 << 53) - 1;
    let Value::Object(fields) = schema else {
        return;
    };
    let has_type = |wanted: &[&str]| match fields.get("type") {
        Some(Value::Array(types)) => types
            .iter()
            .any(|t| t.as_str().is_some_and(|t| wanted.contains(&t))),
        Some(t) => t.as_str().is_some_and(|t| wanted.contains(&t)),
        None => false,
    };
    let is_number = has_type(&["number"]);
    if has_type(&["number", "integer"]) {
        if !fields.contains_key("minimum") && !fields.contains_key("exclusiveMinimum") {
            fields.insert("minimum".into(), json!(-SAFE));
        }
        if !fields.contains_key("maximum") && !fields.contains_key("exclusiveMaximum") {
            fields.insert("maximum".into(), json!(SAFE));
        }
    }
    if is_number && !fields.contains_key("multipleOf") {
        fields.insert("multipleOf".into(), json!(1e-10));
    }
    for (key, value) in fields.iter_mut() {
        match key.as_str() {
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                if let Value::Object(map) = value {
                    map.values_mut().for_each(bound_numbers);
                }
            }
            "items" | "prefixItems" | "anyOf" | "oneOf" | "allOf" => match value {
                Value::Array(list) => list.iter_mut().for_each(bound_numbers),
                other => bound_numbers(other),
            },
            "additionalProperties"
            | "additionalItems"
            | "not"
            | "if"
            | "then"
            | "else"
            | "contains"
            | "propertyNames"
            | "unevaluatedProperties"
            | "unevaluatedItems" => bound_numbers(value),
            _ => {}
        }
    }
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

/// The grammar as a logits processor: masks what the grammar forbids, advances on each token, and finds
/// the tokens the grammar forces (jump-forward).
pub struct ToolConstraint {
    matcher: Matcher,
    eos: Vec<u32>,
    jump_forward: bool,
    /// The mask for the next token when `jump_forward` already computed it.
    next_mask: Option<SimpleVob>,
}

impl ToolConstraint {
    /// Compiles the grammar for `tools`; an unusable schema or an unknown tool name is an error here,
    /// before any token. With `jump_forward`, a token the grammar allows alone is appended without
    /// sampling (the same token masking and greedy picking would give).
    pub fn new(
        env: &GrammarEnv,
        tools: &ToolRegistry,
        format: ToolCallFormat,
        choice: &ToolChoice,
        jump_forward: bool,
    ) -> Result<Self> {
        let lark = lark_grammar(env, tools, format, choice)?;
        let parser = env
            .factory
            .create_parser(TopLevelGrammar::from_lark(lark))
            .map_err(grammar_error)?;
        Ok(ToolConstraint {
            matcher: Matcher::new(Ok(parser)),
            eos: env.eos.clone(),
            jump_forward,
            next_mask: None,
        })
    }

    fn mask(&mut self) -> Result<SimpleVob> {
        let mut mask = self.matcher.compute_mask_or_eos().map_err(grammar_error)?;
        // llguidance allows its EOS where the grammar may end; every end-of-turn token may end it.
        if self.eos.iter().any(|&id| mask.is_allowed(id)) {
            for &id in &self.eos {
                mask.allow_token(id);
            }
        }
        if mask.is_zero() {
            let why = self
                .matcher
                .get_error()
                .unwrap_or_else(|| "no token continues the tool-call grammar".into());
            return Err(WispError::AllTokensMasked(why));
        }
        Ok(mask)
    }
}

impl LogitsProcessor for ToolConstraint {
    fn process(&mut self, _history: &[u32], logits: &mut [f32]) -> Result<()> {
        let mask = match self.next_mask.take() {
            Some(mask) => mask,
            None => self.mask()?,
        };
        for (id, logit) in (0u32..).zip(logits.iter_mut()) {
            if !mask.is_allowed(id) {
                *logit = f32::NEG_INFINITY;
            }
        }
        Ok(())
    }

    fn accept(&mut self, token: u32) -> Result<()> {
        // An end token ends the generation: nothing follows for the grammar to check.
        if self.eos.contains(&token) {
            return Ok(());
        }
        self.matcher.consume_token(token).map_err(grammar_error)
    }

    fn jump_forward(&mut self) -> Result<Vec<u32>> {
        let mut forced = Vec::new();
        if !self.jump_forward {
            return Ok(forced);
        }
        loop {
            let mask = self.mask()?;
            let only = match mask.num_set() {
                1 => mask.first_bit_set().map(|id| id as u32),
                _ => None,
            };
            match only {
                Some(id) if !self.eos.contains(&id) => {
                    self.matcher.consume_token(id).map_err(grammar_error)?;
                    forced.push(id);
                }
                _ => {
                    self.next_mask = Some(mask);
                    return Ok(forced);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unbounded_numbers_get_the_safe_range_and_constants_stay() {
        let mut schema = json!({"type": "object", "properties": {
            "n": {"type": "number", "minimum": 0},
            "i": {"type": ["integer", "null"]},
            "list": {"type": "array", "items": {"anyOf": [{"type": "integer", "exclusiveMaximum": 3}]}},
            "e": {"enum": [{"type": "number"}]}}});
        bound_numbers(&mut schema);
        let safe = (1i64 << 53) - 1;
        let p = &schema["properties"];
        assert_eq!(
            p["n"],
            json!({"type": "number", "minimum": 0, "maximum": safe, "multipleOf": 1e-10})
        );
        assert_eq!(
            p["i"],
            json!({"type": ["integer", "null"], "minimum": -safe, "maximum": safe})
        );
        assert_eq!(
            p["list"]["items"]["anyOf"][0],
            json!({"type": "integer", "exclusiveMaximum": 3, "minimum": -safe})
        );
        assert_eq!(p["e"], json!({"enum": [{"type": "number"}]}));
    }

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
