//! Text generation over the decoder graph: positions, the key/value cache, chunked prefill and decode;
//! choosing each next token, deciding when to stop, and turning tokens into text as they come.

mod generation;
mod history;
mod processor;
mod sampler;
mod speculation;
mod stop;
mod stream;

pub use generation::{GenerateOptions, Generation, Step, Usage};
pub use history::{LogitRows, TokenHistory};
pub use processor::LogitsProcessor;
pub use sampler::{Sampler, SamplingParams};
pub use stop::{FinishReason, StopChecker, StopConditions, StopStep};
pub use stream::TextStream;
