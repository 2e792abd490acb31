//! Text in and out of the model: the tokenizer and the model's own chat template.

mod template;
mod tokenizer;

pub use template::{ChatTemplate, Message};
pub use tokenizer::Tokenizer;
