//! Wisp: a language-model agent that runs inside the browser.
//!
//! The core (everything but `facade`) builds and tests natively; `facade` is the thin wasm-bindgen layer
//! that JavaScript sees.

pub mod agent;
pub mod assembly;
pub mod backend;
pub mod bundle;
pub mod error;
#[cfg(target_arch = "wasm32")]
mod facade;
pub mod generate;
pub mod grammar;
pub mod graph;
pub mod model;
pub mod profile;
pub mod text;
pub mod weights;

pub use error::{Result, WispError};
