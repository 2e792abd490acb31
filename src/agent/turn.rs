//! One assistant message of the agent: a generation whose text goes through the tool-call parser. When it
//! ends, the message is recorded in the conversation and each call is checked against the registry:
//! only calls to registered tools with schema-valid arguments are handed out to be run.

use serde::Serialize;
use serde_json::Value;

use super::conversation::{Conversation, RecordedCall};
use super::{ParseEvent, ToolCallParser};
use crate::backend::Decoder;
use crate::error::Result;
use crate::generate::{FinishReason, Generation};
use crate::text::Tokenizer;

/// What the page hears about, in order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TurnEvent {
    Text {
        text: String,
    },
    ToolCallStarted,
    /// A valid call to a registered tool: run it, then report its result.
    ToolCall {
        id: String,
        name: String,
        arguments: Value,
    },
    /// A call that will not be run; the reason goes back to the model as the call's result.
    InvalidCall {
        id: String,
        name: Option<String>,
        error: String,
    },
}

pub struct Turn {
    generation: Generation,
    /// `None` when the message cannot hold calls (a JSON answer without tools): its text is all answer.
    parser: Option<ToolCallParser>,
    text: String,
    calls: Vec<RecordedCall>,
    invalid: usize,
    /// Calls refused so far (id, name, why), answered when the message ends.
    refused: Vec<(String, String, String)>,
}

/// One step's events, and whether the message is complete.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnStep {
    pub events: Vec<TurnEvent>,
    pub finish: Option<FinishReason>,
}

impl Turn {
    pub fn new(generation: Generation, conversation: &Conversation) -> Self {
        Turn {
            generation,
            parser: Some(ToolCallParser::new(conversation.format)),
            text: String::new(),
            calls: Vec::new(),
            invalid: 0,
            refused: Vec::new(),
        }
    }

    /// A turn whose message is answer text only, where even a call's opener is part of the answer (a JSON
    /// string may hold `<tool_call>`).
    pub fn without_calls(mut self) -> Self {
        self.parser = None;
        self
    }

    pub fn generation(&self) -> &Generation {
        &self.generation
    }

    /// See [`Generation::drop_drafts`].
    pub fn drop_drafts(&mut self, decoder: &mut Decoder) -> Result<()> {
        self.generation.drop_drafts(decoder)
    }

    pub async fn step(
        &mut self,
        decoder: &mut Decoder,
        tokenizer: &Tokenizer,
        conversation: &mut Conversation,
    ) -> Result<TurnStep> {
        let step = self.generation.step(decoder, tokenizer).await?;
        let parsed = match &mut self.parser {
            Some(parser) => {
                let mut parsed = parser.push(&step.text);
                if step.finish.is_some() {
                    parsed.extend(parser.finish());
                }
                parsed
            }
            None if step.text.is_empty() => Vec::new(),
            None => vec![ParseEvent::Text(step.text)],
        };
        let mut events = Vec::with_capacity(parsed.len());
        for event in parsed {
            let event = self.accept(event, conversation);
            if let TurnEvent::InvalidCall { id, name, error } = &event {
                let name = name.clone().unwrap_or_default();
                self.refused.push((id.clone(), name, error.clone()));
            }
            events.push(event);
        }
        if step.finish.is_some() {
            conversation.push_assistant(&self.text, &self.calls);
            // Calls that will not run still get an answer, so the model learns why.
            for (id, name, error) in self.refused.drain(..) {
                let answer = Value::String(format!("error: {error}"));
                conversation.push_tool_result(&id, &name, &answer, 0);
            }
        }
        Ok(TurnStep {
            events,
            finish: step.finish,
        })
    }

    fn accept(&mut self, event: ParseEvent, conversation: &Conversation) -> TurnEvent {
        match event {
            ParseEvent::Text(text) => {
                self.text.push_str(&text);
                TurnEvent::Text { text }
            }
            ParseEvent::ToolCallStarted => TurnEvent::ToolCallStarted,
            ParseEvent::ToolCall {
                id,
                name,
                arguments,
            } => match conversation.tools.validate_arguments(&name, &arguments) {
                Ok(()) => {
                    self.calls.push(RecordedCall {
                        id: id.clone(),
                        name: name.clone(),
                        arguments: arguments.clone(),
                    });
                    TurnEvent::ToolCall {
                        id,
                        name,
                        arguments,
                    }
                }
                Err(error) => {
                    self.calls.push(RecordedCall {
                        id: id.clone(),
                        name: name.clone(),
                        arguments,
                    });
                    TurnEvent::InvalidCall {
                        id,
                        name: Some(name),
                        error: error.to_string(),
                    }
                }
            },
            ParseEvent::Invalid { raw: _, error } => {
                self.invalid += 1;
                TurnEvent::InvalidCall {
                    id: format!("invalid_{}", self.invalid),
                    name: None,
                    error: format!("the tool call could not be read: {error}"),
                }
            }
        }
    }
}
