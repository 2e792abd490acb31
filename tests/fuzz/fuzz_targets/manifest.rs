//! A bundle's `manifest.json` as `Model.load({ bundle })` reads it: `parseManifest`, then each file's URL
//! (`new URL(file.path, manifestUrl)` in `pkg-templates/index.js`), and the manifest's `context_length` as
//! the CPU decoder's context.
//!
//! Properties: a refusal is `INVALID_MANIFEST`; an accepted manifest survives a JSON round trip, holds only
//! numbers JavaScript represents exactly (the facade hands it to JS), and every file's URL, resolved the
//! way browsers resolve it (WHATWG URL), stays inside the bundle's folder; its context length builds a
//! decoder without an allocation sized by the number.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use url::Url;
use wisp::bundle::{BundleFile, Manifest};
use wisp::backend::Decoder;
use wisp::model::{ModelConfig, ModelWeights};

const BASE: &str = "https://models.example/bundles/tiny/manifest.json";
const BUNDLE_DIR: &str = "https://models.example/bundles/tiny/";
/// `Number.MAX_SAFE_INTEGER`.
const JS_SAFE: u64 = (1 << 53) - 1;
/// A complete model small enough to load on every run (see tools/make_fuzz_seeds.py).
const TINY_MODEL: &[u8] = include_bytes!("../corpus/gguf/llama-tiny.gguf");

fn tiny_model() -> &'static (ModelConfig, ModelWeights<'static>) {
    static MODEL: OnceLock<(ModelConfig, ModelWeights<'static>)> = OnceLock::new();
    MODEL.get_or_init(|| ModelWeights::load(TINY_MODEL, None).expect("the tiny model loads"))
}

fn check_file(role: &str, file: &BundleFile) {
    let url = Url::parse(BASE).unwrap().join(&file.path);
    let url = url.unwrap_or_else(|e| {
        panic!(
            "files.{role}.path {:?} is accepted but is no URL: {e}",
            file.path
        )
    });
    assert!(
        url.as_str().starts_with(BUNDLE_DIR) && url.path().len() > "/bundles/tiny/".len(),
        "files.{role}.path {:?} is accepted but resolves to {url}",
        file.path
    );
    if let Some(size) = file.size {
        assert!(
            size <= JS_SAFE,
            "files.{role}.size {size} is accepted but is no exact JS number"
        );
    }
    if let Some(hash) = &file.sha256 {
        assert!(
            hash.len() == 64
                && hash
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
    }
}

fuzz_target!(|bytes: &[u8]| {
    // JavaScript reads the file with TextDecoder, which replaces invalid UTF-8 the same way.
    let text = String::from_utf8_lossy(bytes);
    let manifest = match Manifest::parse(&text) {
        Ok(m) => m,
        Err(e) => {
            assert_eq!(e.code(), "INVALID_MANIFEST", "{e}");
            return;
        }
    };
    let again = serde_json::to_string(&manifest).expect("a manifest serializes");
    assert_eq!(
        Manifest::parse(&again).expect("its own JSON parses"),
        manifest
    );
    let files = &manifest.files;
    check_file("weights", &files.weights);
    for (role, file) in [
        ("config", &files.config),
        ("tokenizer", &files.tokenizer),
        ("chat_template", &files.chat_template),
    ] {
        if let Some(file) = file {
            check_file(role, file);
        }
    }
    if let Some(context_len) = manifest.context_length {
        assert!(
            context_len as u64 <= JS_SAFE,
            "context_length {context_len} is accepted but is no exact JS number"
        );
        let (config, weights) = tiny_model();
        // Any accepted context gives a decoder, or, past the CPU backend's cache limit, MODEL_TOO_LARGE
        // before anything is allocated for it.
        let mut decoder = match Decoder::cpu(config, weights, context_len) {
            Ok(decoder) => decoder,
            Err(e) => {
                assert_eq!(e.code(), "MODEL_TOO_LARGE", "{e}");
                return;
            }
        };
        pollster::block_on(decoder.forward_last(&[1])).expect("one token runs");
    }
});
