//! `Agent`: a conversation with a model, its tools (schemas here; the functions stay in JavaScript), and
//! turns whose tool calls are parsed and validated in Rust. `pkg-templates/agent.js` runs the loop.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::Promise;
use serde::Deserialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::model::{busy, release_drafts, start, GenerateRequest, Inner, Model};
use super::{to_js, to_js_value};
use crate::agent::{
    tool_constraint, Conversation, RecordedCall, ToolCallFormat, ToolChoice, ToolSpec, Turn,
    TurnStep,
};
use crate::bundle;
use crate::error::{Result, WispError};
use crate::generate::LogitsProcessor;
use crate::grammar::response_constraint;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AgentOptions {
    system: Option<String>,
    tool_call_format: Option<bundle::ToolCallFormat>,
    max_result_chars: Option<usize>,
    max_result_tokens: Option<usize>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ToolInput {
    name: String,
    #[serde(default)]
    description: String,
    parameters: serde_json::Value,
    timeout_ms: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallInput {
    id: String,
    name: String,
    arguments: serde_json::Value,
}

fn from_js<T: for<'de> Deserialize<'de>>(value: JsValue, what: &str) -> Result<T> {
    serde_wasm_bindgen::from_value(value)
        .map_err(|e| WispError::InvalidRequest(format!("{what}: {e}")))
}

#[wasm_bindgen]
pub struct Agent {
    model: Rc<Inner>,
    conversation: Rc<RefCell<Conversation>>,
    max_result_tokens: usize,
}

#[wasm_bindgen]
impl Agent {
    /// `options`: `{ system, toolCallFormat ("hermes" | "llama3_json"), maxResultChars, maxResultTokens }`;
    /// the limits on a tool result (characters, tokens) are the agent loop's policy, none when absent.
    #[wasm_bindgen(constructor)]
    pub fn new(model: &Model, options: JsValue) -> std::result::Result<Agent, JsValue> {
        let options: AgentOptions = if options.is_undefined() || options.is_null() {
            AgentOptions::default()
        } else {
            from_js(options, "agent options").map_err(to_js)?
        };
        let Some(template) = &model.inner.template else {
            return Err(to_js(WispError::InvalidModel(
                "an agent needs a model with a chat template".into(),
            )));
        };
        // A template without a tools section gets them Hermes style, and its model calls that way.
        let format = match options.tool_call_format {
            Some(bundle::ToolCallFormat::Llama3Json) if template.renders_tools() => {
                ToolCallFormat::Llama3Json
            }
            _ => ToolCallFormat::Hermes,
        };
        let conversation = Conversation::new(
            options.system,
            format,
            options.max_result_chars.unwrap_or(usize::MAX),
        );
        Ok(Agent {
            model: Rc::clone(&model.inner),
            conversation: Rc::new(RefCell::new(conversation)),
            max_result_tokens: options.max_result_tokens.unwrap_or(usize::MAX),
        })
    }

    fn conversation(&self) -> std::result::Result<std::cell::RefMut<'_, Conversation>, JsValue> {
        self.conversation
            .try_borrow_mut()
            .map_err(|_| to_js(busy()))
    }

    /// Registers a tool's description: `{ name, description, parameters, timeoutMs }`. A schema that
    /// cannot be turned into a tool-call grammar is refused here (`TOOL_GRAMMAR`), not at the next turn.
    #[wasm_bindgen(js_name = addTool)]
    pub fn add_tool(&self, spec: JsValue) -> std::result::Result<(), JsValue> {
        let input: ToolInput = serde_wasm_bindgen::from_value(spec)
            .map_err(|e| to_js(WispError::InvalidTool(format!("tool: {e}"))))?;
        let name = input.name.clone();
        let spec = ToolSpec {
            name: input.name,
            description: input.description,
            parameters: input.parameters,
            timeout_ms: input.timeout_ms,
        };
        let mut conversation = self.conversation()?;
        conversation.tools.register(spec).map_err(to_js)?;
        let checked = self.model.grammar_env().and_then(|env| {
            let only = ToolChoice::Named(name.clone());
            tool_constraint(
                env,
                &conversation.tools,
                conversation.format,
                &only,
                None,
                false,
            )
        });
        if let Err(error) = checked {
            conversation.tools.remove(&name);
            return Err(to_js(error));
        }
        Ok(())
    }

    #[wasm_bindgen(js_name = removeTool)]
    pub fn remove_tool(&self, name: &str) -> std::result::Result<bool, JsValue> {
        Ok(self.conversation()?.tools.remove(name))
    }

    #[wasm_bindgen(js_name = pushUser)]
    pub fn push_user(&self, text: &str) -> std::result::Result<(), JsValue> {
        if text.trim().is_empty() {
            return Err(to_js(WispError::InvalidRequest(
                "the message is empty".into(),
            )));
        }
        self.conversation()?.push_user(text);
        Ok(())
    }

    /// Records an earlier assistant message (replaying a conversation): its text and its tool calls,
    /// `[{ id, name, arguments }]` with `arguments` a JSON object or a string holding one.
    #[wasm_bindgen(js_name = pushAssistant)]
    pub fn push_assistant(
        &self,
        text: Option<String>,
        calls: JsValue,
    ) -> std::result::Result<(), JsValue> {
        let calls: Vec<CallInput> = if calls.is_undefined() || calls.is_null() {
            Vec::new()
        } else {
            from_js(calls, "assistant tool calls").map_err(to_js)?
        };
        let calls = calls
            .into_iter()
            .map(|c| {
                let arguments = match c.arguments {
                    serde_json::Value::String(s) => serde_json::from_str(&s).map_err(|e| {
                        WispError::InvalidRequest(format!(
                            "arguments of tool call '{}' are not JSON: {e}",
                            c.id
                        ))
                    })?,
                    other => other,
                };
                Ok(RecordedCall {
                    id: c.id,
                    name: c.name,
                    arguments,
                })
            })
            .collect::<Result<Vec<_>>>()
            .map_err(to_js)?;
        self.conversation()?
            .push_assistant(text.as_deref().unwrap_or(""), &calls);
        Ok(())
    }

    /// Records a tool's result (any JSON value; strings as they are) for call `id`; `omitted` counts the
    /// characters the page already cut from the end of a long string result.
    #[wasm_bindgen(js_name = pushToolResult)]
    pub fn push_tool_result(
        &self,
        id: &str,
        name: &str,
        result: JsValue,
        omitted: Option<usize>,
    ) -> std::result::Result<(), JsValue> {
        let value: serde_json::Value = from_js(result, "tool result").map_err(to_js)?;
        let tokenizer = self.model.tokenizer().map_err(to_js)?;
        self.conversation()?
            .push_tool_result_within(
                id,
                name,
                &value,
                omitted.unwrap_or(0),
                tokenizer,
                self.max_result_tokens,
            )
            .map_err(to_js)
    }

    /// How many messages the conversation holds (a mark for `truncate`).
    #[wasm_bindgen(getter, js_name = messageCount)]
    pub fn message_count(&self) -> std::result::Result<usize, JsValue> {
        Ok(self.conversation()?.messages.len())
    }

    /// Forgets the messages after the first `len` (the system prompt stays): how a failed run is undone.
    pub fn truncate(&self, len: usize) -> std::result::Result<(), JsValue> {
        self.conversation()?.truncate(len);
        Ok(())
    }

    pub fn reset(&self) -> std::result::Result<(), JsValue> {
        self.conversation()?.reset();
        Ok(())
    }

    #[wasm_bindgen(getter)]
    pub fn messages(&self) -> std::result::Result<JsValue, JsValue> {
        to_js_value(&self.conversation()?.messages)
    }

    /// Starts the next assistant message (the same generation options as `Model.startGeneration`).
    /// `toolChoice` (`"auto"` when undefined, `"none"`, `"required"`, a tool name or `{ type: "function",
    /// function: { name } }`) says which calls it may make; every call it makes names a registered tool and
    /// has schema-valid arguments (constrained decoding). With a `responseFormat`, a message that is not
    /// calls is the JSON answer.
    #[wasm_bindgen(js_name = startTurn)]
    pub fn start_turn(&self, request: JsValue, tool_choice: JsValue) -> Promise {
        let model = Rc::clone(&self.model);
        let conversation = Rc::clone(&self.conversation);
        future_to_promise(async move {
            let choice: ToolChoice = if tool_choice.is_undefined() || tool_choice.is_null() {
                ToolChoice::Auto
            } else {
                from_js(tool_choice, "toolChoice").map_err(to_js)?
            };
            let request = GenerateRequest::from_js(request).map_err(to_js)?;
            let prompt = {
                let conversation = conversation.try_borrow().map_err(|_| to_js(busy()))?;
                let template = model
                    .template
                    .as_ref()
                    .ok_or_else(|| to_js(WispError::InvalidModel("no chat template".into())))?;
                let text = conversation.prompt(template).map_err(to_js)?;
                model
                    .tokenizer()
                    .and_then(|t| t.encode(&text))
                    .map_err(to_js)?
            };
            // Built before the prefill, so that a bad `toolChoice` or schema fails without touching the
            // cache.
            let (constraint, calls_possible) = {
                let conversation = conversation.try_borrow().map_err(|_| to_js(busy()))?;
                turn_constraint(&model, &conversation, &choice, &request).map_err(to_js)?
            };
            let (generation, epoch) = start(&model, &prompt, request, constraint)
                .await
                .map_err(to_js)?;
            let turn = {
                let conversation = conversation.try_borrow().map_err(|_| to_js(busy()))?;
                let turn = Turn::new(generation, &conversation);
                if calls_possible {
                    turn
                } else {
                    turn.without_calls()
                }
            };
            Ok(AgentTurn {
                model,
                conversation,
                turn: Rc::new(RefCell::new(turn)),
                epoch,
            }
            .into())
        })
    }
}

/// The constraint of the next assistant message, and whether it can hold calls: none when it is free text
/// without tools; the JSON answer alone when it cannot call; otherwise the tool-call grammar (with the
/// JSON answer in place of text when there is a `responseFormat`).
fn turn_constraint(
    model: &Inner,
    conversation: &Conversation,
    choice: &ToolChoice,
    request: &GenerateRequest,
) -> Result<(Option<Box<dyn LogitsProcessor>>, bool)> {
    // A JSON answer; `{ type: "text" }` is the same as none.
    let answer = request
        .response_format
        .as_ref()
        .filter(|format| format.schema().is_some());
    let no_calls = matches!(choice, ToolChoice::None)
        || (conversation.tools.is_empty() && *choice == ToolChoice::Auto);
    if no_calls {
        let constraint = match answer {
            Some(format) => response_constraint(model.grammar_env()?, format, true)?
                .map(|c| Box::new(c) as Box<dyn LogitsProcessor>),
            // The tools stay registered with "none": the grammar keeps their openers out of the text.
            None if !conversation.tools.is_empty() => Some(Box::new(tool_constraint(
                model.grammar_env()?,
                &conversation.tools,
                conversation.format,
                choice,
                None,
                true,
            )?)
                as Box<dyn LogitsProcessor>),
            None => None,
        };
        return Ok((constraint, answer.is_none()));
    }
    let env = model.grammar_env()?;
    let schema = match answer {
        Some(format) => {
            // The schema alone first, so that a bad one is a RESPONSE_FORMAT error.
            response_constraint(env, format, false)?;
            format.schema()
        }
        None => None,
    };
    let constraint = tool_constraint(
        env,
        &conversation.tools,
        conversation.format,
        choice,
        schema.as_ref(),
        true,
    )?;
    Ok((Some(Box::new(constraint)), true))
}

/// The step with each call's arguments as JSON text, which the page reads with `JSON.parse`. Handed over
/// as an object, the arguments would be built with `object[key] = value`, where a model-written
/// `"__proto__"` key sets the object's prototype instead of a property: the tool would not get the
/// arguments that were validated.
fn with_arguments_as_text(step: &TurnStep) -> std::result::Result<serde_json::Value, JsValue> {
    let mut value = serde_json::to_value(step).map_err(|e| {
        to_js(WispError::Internal(format!(
            "cannot convert a result for JS: {e}"
        )))
    })?;
    if let Some(events) = value
        .get_mut("events")
        .and_then(serde_json::Value::as_array_mut)
    {
        for event in events {
            if let Some(arguments) = event.get_mut("arguments") {
                *arguments = serde_json::Value::String(arguments.to_string());
            }
        }
    }
    Ok(value)
}

#[wasm_bindgen]
pub struct AgentTurn {
    model: Rc<Inner>,
    conversation: Rc<RefCell<Conversation>>,
    turn: Rc<RefCell<Turn>>,
    epoch: u64,
}

#[wasm_bindgen]
impl AgentTurn {
    /// Resolves to `{ events, finish }`: events are `{ type: "text", text }`, `{ type: "tool_call_started" }`,
    /// `{ type: "tool_call", id, name, arguments }` (valid: run it) and `{ type: "invalid_call", id, name,
    /// error }` (not run; the error already went back to the model).
    pub fn step(&self) -> Promise {
        let model = Rc::clone(&self.model);
        let conversation = Rc::clone(&self.conversation);
        let turn = Rc::clone(&self.turn);
        let epoch = self.epoch;
        future_to_promise(async move {
            if model.epoch.get() != epoch {
                return Err(to_js(WispError::Busy(
                    "the model was used by another call since this turn started".into(),
                )));
            }
            let tokenizer = model.tokenizer().map_err(to_js)?;
            let mut decoder = model.decoder.try_borrow_mut().map_err(|_| to_js(busy()))?;
            let mut conversation = conversation.try_borrow_mut().map_err(|_| to_js(busy()))?;
            let mut turn = turn.try_borrow_mut().map_err(|_| to_js(busy()))?;
            let step = turn
                .step(&mut decoder, tokenizer, &mut conversation)
                .await
                .map_err(to_js)?;
            to_js_value(&with_arguments_as_text(&step)?)
        })
    }

    #[wasm_bindgen(getter)]
    pub fn usage(&self) -> std::result::Result<JsValue, JsValue> {
        let turn = self.turn.try_borrow().map_err(|_| to_js(busy()))?;
        to_js_value(&turn.generation().usage())
    }
}

impl Drop for AgentTurn {
    /// As for `Generation`: unconfirmed draft tokens of an abandoned turn leave the cache.
    fn drop(&mut self) {
        if let Ok(mut turn) = self.turn.try_borrow_mut() {
            release_drafts(&self.model, self.epoch, |decoder| turn.drop_drafts(decoder));
        }
    }
}
