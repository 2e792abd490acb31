//! The agent's tool side: the tools the page registered, and finding the model's calls to them.

pub mod toolcall;
pub mod tools;

pub use toolcall::{ParseEvent, ToolCallFormat, ToolCallParser};
pub use tools::{ArgumentProblem, ToolRegistry, ToolSpec};
