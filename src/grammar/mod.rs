//! Constrained decoding with llguidance: the model's vocabulary as llguidance sees it (built once per model),
//! a grammar as a logits processor, and JSON answers that follow a schema (`response_format`). The tool-call
//! grammar of the agent (`agent::grammar`) is built on the same pieces.

mod constraint;
mod env;
mod json;

pub use constraint::GrammarConstraint;
pub use env::GrammarEnv;
pub(crate) use json::too_deep;
pub use json::{
    json_rule, lark_string, response_constraint, JsonSchemaFormat, ResponseFormat, MAX_SCHEMA_DEPTH,
};
