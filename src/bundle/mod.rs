//! Model bundles: a small JSON manifest naming a model's files (with their sha256) and how to talk to it.

mod manifest;

pub use manifest::{BundleFile, BundleFiles, Manifest, ToolCallFormat, FORMAT};
