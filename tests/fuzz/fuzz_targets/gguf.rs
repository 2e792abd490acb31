//! A GGUF file as `Model.load` reads one: the weights reader, then (as the facade does for a GGUF without
//! side files) the configuration from its metadata, its tokenizer and chat template, and the CPU decoder,
//! which runs one token. Every tensor is also dequantized, as the WebGPU path does.
//!
//! Properties: errors are the load path's coded errors; a parsed file's tensors lie inside the bytes with
//! exactly the size their dims and type need; dequantized tensors have one value per element. libFuzzer's
//! `-malloc_limit_mb` (tools/fuzz.sh) turns an allocation sized by a declared count into a crash.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wisp::backend::Decoder;
use wisp::model::ModelWeights;
use wisp::text::{ChatTemplate, Message, Tokenizer};
use wisp::weights::gguf::{Array, GgufFile, Value};
use wisp::WispError;

fn expect_code(error: &WispError, allowed: &[&str]) {
    assert!(
        allowed.contains(&error.code()),
        "unexpected error {}: {error}",
        error.code()
    );
}

fn check_array(array: &Array) {
    match array {
        Array::Scalars { .. } => {
            assert_eq!(
                array.scalars().expect("a scalar array").count(),
                array.len()
            )
        }
        Array::Strings(items) => assert_eq!(items.len(), array.len()),
        Array::Arrays(items) => items.iter().for_each(check_array),
    }
}

fn check_file(bytes: &[u8], file: &GgufFile) {
    assert!(file.alignment().is_power_of_two());
    assert_eq!(file.data_offset() % file.alignment(), 0);
    for (key, value) in file.metadata().iter() {
        assert_eq!(file.metadata().get(key), Some(value));
        if let Value::Array(array) = value {
            check_array(array);
        }
    }
    let range = bytes.as_ptr_range();
    for t in file.tensors() {
        assert!(std::ptr::eq(file.tensor(t.name()).expect("indexed"), t));
        let (block_len, block_bytes) = t.ggml_type().block_layout();
        let data = t.data().expect("a located tensor reads");
        assert_eq!(data.len(), t.n_elements() / block_len * block_bytes);
        let start = file.data_offset() + t.offset();
        assert_eq!(
            data.as_ptr_range(),
            range.start.wrapping_add(start)..range.start.wrapping_add(start + data.len())
        );
        match t.to_f32() {
            Ok(values) => assert_eq!(values.len(), t.n_elements()),
            Err(e) => expect_code(&e, &["UNSUPPORTED_WEIGHTS", "INVALID_WEIGHTS"]),
        }
    }
}

/// What `Model.load` does with GGUF bytes and no other file, on the CPU backend.
fn load(bytes: &[u8]) -> wisp::Result<()> {
    let (config, source) = ModelWeights::load(bytes, None)?;
    let meta = source.metadata().expect("GGUF metadata");
    let tokenizer = match meta.get("tokenizer.ggml.tokens") {
        Some(_) => Some(Tokenizer::from_gguf(meta)?),
        None => None,
    };
    let template = match meta.get_str("tokenizer.chat_template") {
        Ok(text) => Some(ChatTemplate::new(text)?),
        Err(_) => None,
    };
    let context_len = 512.min(config.max_position_embeddings);
    let mut decoder = Decoder::cpu(&config, &source, context_len)?;
    let prompt = match &template {
        Some(t) => t.render(&[Message::new("user", "Hi!")], None, true)?,
        None => "Hi!".to_string(),
    };
    if let Some(tokenizer) = tokenizer {
        let ids = tokenizer.encode(&prompt)?;
        let text = tokenizer.decode(&ids)?;
        assert!(ids.is_empty() || !text.is_empty());
        if let Some(&first) = ids.first() {
            let logits = pollster::block_on(decoder.forward_last(&[first]))?;
            assert_eq!(logits.len(), config.vocab_size);
        }
    }
    Ok(())
}

fuzz_target!(|bytes: &[u8]| {
    match GgufFile::parse(bytes) {
        Ok(file) => check_file(bytes, &file),
        Err(e) => expect_code(&e, &["INVALID_WEIGHTS", "UNSUPPORTED_WEIGHTS"]),
    }
    if let Err(e) = load(bytes) {
        expect_code(
            &e,
            &[
                "INVALID_WEIGHTS",
                "UNSUPPORTED_WEIGHTS",
                "INVALID_MODEL",
                "INVALID_INPUT",
                "CONTEXT_OVERFLOW",
            ],
        );
    }
});
