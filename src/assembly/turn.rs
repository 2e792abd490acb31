//! An agent's next assistant message on an assembled model: its prompt, its constraint and its start.

use super::{busy, AssembledModel, GenerateRequest};
use crate::agent::{tool_constraint, Conversation, ToolChoice, ToolSpec, Turn};
use crate::error::Result;
use crate::generate::LogitsProcessor;
use crate::grammar::response_constraint;

/// The constraint of the next assistant message, and whether it can hold calls: none when it is free text
/// without tools; the JSON answer alone when it cannot call; otherwise the tool-call grammar (with the
/// JSON answer in place of text when there is a `responseFormat`).
pub fn turn_constraint(
    model: &AssembledModel,
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

impl AssembledModel {
    /// Registers a tool in `conversation` after checking that its schema can be turned into this model's
    /// tool-call grammar (`TOOL_GRAMMAR` here, not at the next turn); nothing is registered on failure.
    pub fn register_tool(&self, conversation: &mut Conversation, spec: ToolSpec) -> Result<()> {
        let name = spec.name.clone();
        conversation.tools.register(spec)?;
        let checked = self.grammar_env().and_then(|env| {
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
        if checked.is_err() {
            conversation.tools.remove(&name);
        }
        checked.map(|_| ())
    }

    /// Starts the next assistant message of `conversation`: renders and encodes its prompt, builds the
    /// constraint `choice` and the request ask for (before the prefill, so that a bad `toolChoice` or
    /// schema fails without touching the cache), and prefills. Returns the turn and its epoch.
    pub async fn start_turn(
        &self,
        conversation: &std::cell::RefCell<Conversation>,
        request: GenerateRequest,
        choice: &ToolChoice,
    ) -> Result<(Turn, u64)> {
        let (prompt, constraint, calls_possible) = {
            let conversation = conversation.try_borrow().map_err(|_| busy())?;
            let text = conversation.prompt(self.template()?)?;
            let prompt = self.tokenizer()?.encode(&text)?;
            let (constraint, calls_possible) =
                turn_constraint(self, &conversation, choice, &request)?;
            (prompt, constraint, calls_possible)
        };
        let (generation, epoch) = self.start(&prompt, request, constraint).await?;
        let conversation = conversation.try_borrow().map_err(|_| busy())?;
        let turn = Turn::new(generation, &conversation);
        let turn = if calls_possible {
            turn
        } else {
            turn.without_calls()
        };
        Ok((turn, epoch))
    }
}
