//! Text generation over the decoder graph: positions, the key/value cache, chunked prefill and decode.

mod decoder;

pub use decoder::Decoder;
