//! `Agent`: a conversation with a model, its tools (schemas here; the functions stay in JavaScript), and
//! turns whose tool calls are parsed and validated in Rust. `pkg-templates/agent.js` runs the loop.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::Promise;
use serde::Deserialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use super::model::{request_from_js, Model};
use super::{to_js, to_js_value};
use crate::agent::{Conversation, RecordedCall, ToolChoice, ToolSpec, Turn, TurnStep};
use crate::assembly::{busy, AssembledModel};
use crate::bundle;
use crate::error::{Result, WispError};
use crate::text::Message;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AgentOptions {
    system: Option<String>,
    tool_call_format: Option<bundle::ToolCallFormat>,
    max_result_chars: Option<usize>,
    max_result_tokens: Option<usize>,
    max_history_tokens: Option<usize>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ToolInput {
    name: String,
    #[serde(default)]
    description: String,
    parameters: serde_json::Value,
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
    model: Rc<AssembledModel>,
    conversation: Rc<RefCell<Conversation>>,
    max_result_tokens: usize,
    /// The context's size in tokens, read once: a turn of another agent may hold the decoder.
    capacity: usize,
}

#[wasm_bindgen]
impl Agent {
    /// `options`: `{ system, toolCallFormat ("hermes" | "llama3_json"), maxResultChars, maxResultTokens,
    /// maxHistoryTokens }`;
    /// the limits on a tool result (characters, tokens) are the agent loop's policy, none when absent.
    #[wasm_bindgen(constructor)]
    pub fn new(model: &Model, options: JsValue) -> std::result::Result<Agent, JsValue> {
        let options: AgentOptions = if options.is_undefined() || options.is_null() {
            AgentOptions::default()
        } else {
            from_js(options, "agent options").map_err(to_js)?
        };
        let mut conversation = model
            .inner
            .conversation(
                options.system,
                options.tool_call_format,
                options.max_result_chars.unwrap_or(usize::MAX),
            )
            .map_err(to_js)?;
        conversation.max_history_tokens = options.max_history_tokens.unwrap_or(usize::MAX);
        let capacity = model
            .inner
            .decoder
            .try_borrow()
            .map_err(|_| to_js(busy()))?
            .capacity();
        Ok(Agent {
            capacity,
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

    /// Registers a tool's description: `{ name, description, parameters }` (the timeout and approval stay with the JavaScript loop). A schema that
    /// cannot be turned into a tool-call grammar is refused here (`TOOL_GRAMMAR`), not at the next turn.
    #[wasm_bindgen(js_name = addTool)]
    pub fn add_tool(&self, spec: JsValue) -> std::result::Result<(), JsValue> {
        let input: ToolInput = serde_wasm_bindgen::from_value(spec)
            .map_err(|e| to_js(WispError::InvalidTool(format!("tool: {e}"))))?;
        let spec = ToolSpec {
            name: input.name,
            description: input.description,
            parameters: input.parameters,
        };
        let mut conversation = self.conversation()?;
        self.model
            .register_tool(&mut conversation, spec)
            .map_err(to_js)?;
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

    /// `{ capacity, systemAndTools, history, free, reserve, fits }` for the next message's prompt, with
    /// room for an answer of `maxTokens`.
    #[wasm_bindgen(js_name = contextUsage)]
    pub fn context_usage(&self, max_tokens: usize) -> std::result::Result<JsValue, JsValue> {
        let capacity = self.capacity;
        let usage = self
            .conversation()?
            .usage(
                self.model.template().map_err(to_js)?,
                self.model.tokenizer().map_err(to_js)?,
                capacity,
                max_tokens,
            )
            .map_err(to_js)?;
        to_js_value(&usage)
    }

    /// Trims the history until the next prompt leaves room for an answer (`Conversation::fit`):
    /// `{ messages, shortened, tokens }` of what went, or null when it already fits.
    #[wasm_bindgen(js_name = fitContext)]
    pub fn fit_context(&self, max_tokens: usize) -> std::result::Result<JsValue, JsValue> {
        let capacity = self.capacity;
        let trim = self
            .conversation()?
            .fit(
                self.model.template().map_err(to_js)?,
                self.model.tokenizer().map_err(to_js)?,
                capacity,
                max_tokens,
            )
            .map_err(to_js)?;
        to_js_value(&trim)
    }

    /// `{ tokens, cached }`: the tokens every prompt of this agent begins with (system message and
    /// tools), and whether the model's cache begins with them.
    pub fn prefix(&self) -> std::result::Result<JsValue, JsValue> {
        let (ids, cached) = self.model.prefix(&*self.conversation()?).map_err(to_js)?;
        let out = js_sys::Object::new();
        js_sys::Reflect::set(&out, &"tokens".into(), &js_sys::Uint32Array::from(&ids[..]))?;
        js_sys::Reflect::set(&out, &"cached".into(), &cached.into())?;
        Ok(out.into())
    }

    /// The cached system + tools prefix as bytes (its keys and values), or undefined when the model's
    /// cache does not begin with it; `restoreCache` on a later page puts it back.
    #[wasm_bindgen(js_name = savePrefix)]
    pub fn save_prefix(&self) -> std::result::Result<Option<js_sys::Uint8Array>, JsValue> {
        let bytes = self
            .model
            .save_prefix(&*self.conversation()?)
            .map_err(to_js)?;
        Ok(bytes.map(|b| js_sys::Uint8Array::from(&b[..])))
    }

    /// Replaces the model's cache by bytes of `savePrefix` (made by this Wisp version, backend and model
    /// shape; `INVALID_INPUT` otherwise, the cache unchanged) and returns how many tokens they hold.
    #[wasm_bindgen(js_name = restoreCache)]
    pub fn restore_cache(&self, bytes: &[u8]) -> std::result::Result<usize, JsValue> {
        self.model.restore_cache(bytes).map_err(to_js)
    }

    /// Replaces every message after the system message with `history` (OpenAI-shaped messages).
    #[wasm_bindgen(js_name = setHistory)]
    pub fn set_history(&self, history: JsValue) -> std::result::Result<(), JsValue> {
        let history: Vec<Message> = from_js(history, "messages").map_err(to_js)?;
        self.conversation()?.set_history(history).map_err(to_js)
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
            let request = request_from_js(request).map_err(to_js)?;
            let (turn, epoch) = model
                .start_turn(&conversation, request, &choice)
                .await
                .map_err(to_js)?;
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
    model: Rc<AssembledModel>,
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
            self.model
                .release_drafts(self.epoch, |decoder| turn.drop_drafts(decoder));
        }
    }
}
