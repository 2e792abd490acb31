//! The agent: the tools the page registered, finding the model's calls to them, and the conversation
//! the calls and their results are written into.

pub mod conversation;
pub mod grammar;
pub mod hermes_prompt;
pub mod toolcall;
pub mod tools;
pub mod turn;

pub use conversation::{canonical_json, Conversation, RecordedCall};
pub use grammar::{tool_constraint, ToolChoice};
pub use hermes_prompt::render_chat;
pub use toolcall::{ParseEvent, ToolCallFormat, ToolCallParser};
pub use tools::{ArgumentProblem, ToolRegistry, ToolSpec};
pub use turn::{Turn, TurnEvent, TurnStep};
