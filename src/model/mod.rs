//! What a model is: its architecture configuration, read from Hugging Face `config.json` or GGUF
//! metadata, checked before any weights are touched.

mod config;
pub(crate) mod source;

pub use config::{Family, ModelConfig, RopeStyle};
pub use source::ModelWeights;
