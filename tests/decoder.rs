//! The decoder graph on a real GPU adapter (lavapipe in CI) against onnxruntime's logits for tiny
//! random-weight models of each family (tools/make_decoder_fixtures.py).

#[path = "support/argmax.rs"]
mod argmax;

#[path = "support/decoder_reference.rs"]
mod decoder_reference;
use decoder_reference::{assert_close, dir, reference, Reference};

use safetensors::{Dtype, SafeTensors};
use wisp::backend::{BackendKind, Decoder};
use wisp::graph::{DecoderShape, WeightProvider};
use wisp::model::ModelConfig;
use wisp::WispError;

/// Test-only reader over the fixture's safetensors (f32).
struct Fixture<'a>(SafeTensors<'a>);

impl WeightProvider for Fixture<'_> {
    fn tensor(&mut self, name: &str, dims: &[usize]) -> wisp::Result<Vec<f32>> {
        let t = self
            .0
            .tensor(name)
            .map_err(|e| WispError::InvalidModel(format!("{name}: {e}")))?;
        assert_eq!(t.dtype(), Dtype::F32);
        if t.shape() != dims {
            return Err(WispError::InvalidModel(format!(
                "{name}: shape {:?}, expected {dims:?}",
                t.shape()
            )));
        }
        Ok(t.data()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect())
    }
}

fn load(family: &str, shape: DecoderShape) -> (Decoder, Reference) {
    let config = ModelConfig::from_hf_json(
        &std::fs::read_to_string(dir().join(format!("{family}.config.json"))).unwrap(),
    )
    .unwrap();
    let bytes = std::fs::read(dir().join(format!("{family}.safetensors"))).unwrap();
    let mut weights = Fixture(SafeTensors::deserialize(&bytes).unwrap());
    let decoder =
        pollster::block_on(Decoder::new(&config, &mut weights, shape)).expect("decoder builds");
    (decoder, reference(family))
}

fn check_family(family: &str) {
    let (mut dec, reference) = load(
        family,
        DecoderShape {
            chunk_len: 4,
            cache_len: 32,
        },
    );
    pollster::block_on(async {
        // Chunked prefill of a whole sequence (20 tokens: 5 full chunks).
        let case = &reference.cases[0];
        let got = dec.forward(&case.tokens).await.unwrap();
        assert_close(&got, case, 0, "prefill");

        // Token by token after a rollback: each call is one real token and three padding rows.
        dec.seek(0).unwrap();
        let case = &reference.cases[1];
        let got = dec.forward(&case.tokens[..5]).await.unwrap();
        assert_close(&got, case, 0, "prefix");
        for (i, &tok) in case.tokens.iter().enumerate().skip(5) {
            let got = dec.forward(&[tok]).await.unwrap();
            assert_close(&got, case, i, "decode");
        }
        assert_eq!(dec.len(), case.tokens.len());

        // Rolling back drops a branch: the continuation is computed as if it never happened.
        dec.seek(7).unwrap();
        let got = dec.forward(&case.tokens[7..]).await.unwrap();
        assert_close(&got, case, 7, "after seek");
    });
}

#[test]
fn a_new_turn_prefills_only_what_is_new() {
    let (mut dec, reference) = load(
        "llama",
        DecoderShape {
            chunk_len: 4,
            cache_len: 32,
        },
    );
    let case = &reference.cases[0];
    pollster::block_on(async {
        dec.forward(&case.tokens[..12]).await.unwrap();
        // The whole conversation so far plus a new turn: only the new tokens run.
        let kept = dec.reuse_prefix(&case.tokens);
        assert_eq!(kept, 12);
        let got = dec.forward(&case.tokens[kept..]).await.unwrap();
        assert_close(&got, case, 12, "new turn");
        assert_eq!(dec.tokens(), case.tokens.as_slice());

        // A branch that differs from position 8 on keeps only the shared prefix.
        let mut branch = case.tokens[..8].to_vec();
        branch.extend([5, 6]);
        assert_eq!(dec.reuse_prefix(&branch), 8);
        assert_eq!(dec.len(), 8);

        // The same prompt again keeps all but its last token, whose logits the caller needs.
        dec.seek(0).unwrap();
        dec.forward(&case.tokens[..6]).await.unwrap();
        assert_eq!(dec.reuse_prefix(&case.tokens[..6]), 5);
        let got = dec.forward(&case.tokens[5..6]).await.unwrap();
        assert_close(&got, case, 5, "same prompt");
    });
}

#[test]
fn llama_matches_onnxruntime() {
    check_family("llama");
}

#[test]
fn qwen2_matches_onnxruntime() {
    check_family("qwen2");
}

#[test]
fn qwen3_matches_onnxruntime() {
    check_family("qwen3");
}

#[test]
fn overflow_and_bad_tokens_are_refused_and_leave_the_cache_as_it_was() {
    let (mut dec, reference) = load(
        "llama",
        DecoderShape {
            chunk_len: 4,
            cache_len: 8,
        },
    );
    pollster::block_on(async {
        let case = &reference.cases[1];
        dec.forward(&case.tokens[..6]).await.unwrap();
        let err = dec.forward(&case.tokens[6..9]).await.unwrap_err();
        assert_eq!(err.code(), "CONTEXT_OVERFLOW", "{err}");
        let err = dec.forward(&[256]).await.unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT", "{err}");
        assert_eq!(dec.len(), 6);
        assert_eq!(dec.seek(7).unwrap_err().code(), "INVALID_INPUT");
        let got = dec.forward(&case.tokens[6..8]).await.unwrap();
        assert_close(&got, case, 6, "after refusals");
    });
}

/// A fresh decoder of `backend` over the llama fixture, with a context of `context` tokens.
fn fresh(backend: BackendKind, context: usize) -> Decoder {
    match backend {
        BackendKind::Webgpu => {
            load(
                "llama",
                DecoderShape {
                    chunk_len: 4,
                    cache_len: context,
                },
            )
            .0
        }
        BackendKind::Cpu => {
            let json = std::fs::read_to_string(dir().join("llama.config.json")).unwrap();
            let bytes = std::fs::read(dir().join("llama.safetensors")).unwrap();
            let (config, weights) = wisp::model::ModelWeights::load(&bytes, Some(&json)).unwrap();
            Decoder::cpu(&config, &weights, context).unwrap()
        }
    }
}

/// A cache saved as bytes and restored into another decoder (a later page) goes on as the decoder that
/// prefilled it: the continuation's logits are onnxruntime's, and the prefilling decoder's bit for bit.
/// Bytes of the other backend, damaged bytes and more tokens than the context holds are refused, with the
/// cache left as it was.
#[test]
fn a_restored_cache_goes_on_as_its_prefill() {
    let reference = reference("llama");
    let case = &reference.cases[0];
    pollster::block_on(async {
        let mut saved = Vec::new();
        for backend in [BackendKind::Cpu, BackendKind::Webgpu] {
            let mut first = fresh(backend, 32);
            first.forward(&case.tokens[..12]).await.unwrap();
            let bytes = first.save_cache(10).unwrap();
            assert_eq!(
                first.save_cache(13).unwrap_err().code(),
                "INVALID_INPUT",
                "{backend:?}"
            );

            let mut later = fresh(backend, 32);
            assert_eq!(later.restore_cache(&bytes).unwrap(), &case.tokens[..10]);
            assert_eq!(later.tokens(), &case.tokens[..10]);
            let got = later.forward(&case.tokens[10..]).await.unwrap();
            assert_close(&got, case, 10, "after a restore");
            first.seek(10).unwrap();
            let want = first.forward(&case.tokens[10..]).await.unwrap();
            assert!(got == want, "{backend:?}: the restored cache differs");

            // Damaged bytes, and bytes of more tokens than this context: refused, the cache unchanged.
            let mut small = fresh(backend, 8);
            small.forward(&case.tokens[..3]).await.unwrap();
            for bad in [&bytes[..bytes.len() - 4], &bytes[1..]] {
                let err = small.restore_cache(bad).unwrap_err();
                assert_eq!(err.code(), "INVALID_INPUT", "{backend:?}: {err}");
            }
            let err = small.restore_cache(&bytes).unwrap_err();
            assert_eq!(err.code(), "CONTEXT_OVERFLOW", "{backend:?}: {err}");
            assert_eq!(small.tokens(), &case.tokens[..3]);
            let got = small.forward(&case.tokens[3..6]).await.unwrap();
            assert_close(&got, case, 3, "after refused restores");
            saved.push((backend, bytes));
        }
        // Each backend's bytes are its own (their keys and values round differently).
        for (made_by, bytes) in &saved {
            for backend in [BackendKind::Cpu, BackendKind::Webgpu] {
                if backend != *made_by {
                    let err = fresh(backend, 32).restore_cache(bytes).unwrap_err();
                    assert_eq!(err.code(), "INVALID_INPUT", "{err}");
                    assert!(err.to_string().contains("backend"), "{err}");
                }
            }
        }
    });
}

#[test]
fn odd_chunk_len_is_refused_by_name() {
    let config = ModelConfig::from_hf_json(
        &std::fs::read_to_string(dir().join("llama.config.json")).unwrap(),
    )
    .unwrap();
    let bytes = std::fs::read(dir().join("llama.safetensors")).unwrap();
    let mut weights = Fixture(SafeTensors::deserialize(&bytes).unwrap());
    let shape = DecoderShape {
        chunk_len: 3,
        cache_len: 32,
    };
    let err = wisp::graph::build_decoder(&config, &mut weights, shape)
        .err()
        .unwrap();
    assert_eq!(err.code(), "INVALID_REQUEST", "{err}");
    assert!(err.to_string().contains("chunk_len is 3"), "{err}");
}

/// `backend: "auto"` on a hardware adapter: both backends timed over one decode step, the faster kept
/// with both figures, and the kept decoder left at position 0 giving the reference logits (here on
/// lavapipe, which the browser would call a fallback and skip; the measurement itself is the same).
#[test]
fn auto_keeps_the_backend_measured_faster() {
    let json = std::fs::read_to_string(dir().join("llama.config.json")).unwrap();
    let bytes = std::fs::read(dir().join("llama.safetensors")).unwrap();
    let (config, mut weights) = wisp::model::ModelWeights::load(&bytes, Some(&json)).unwrap();
    let shape = DecoderShape {
        chunk_len: 4,
        cache_len: 32,
    };
    let (mut dec, why, measured) = pollster::block_on(wisp::assembly::faster_decoder(
        &config,
        &mut weights,
        shape,
        "lavapipe",
        "this device and model".into(),
    ))
    .expect("both backends build");
    let figures = figures_of(&why);
    assert_eq!(figures.len(), 2, "{why}");
    let cpu_faster = figures[1] < figures[0];
    let kept = if cpu_faster {
        "auto: the CPU, measured faster"
    } else {
        "auto: WebGPU, measured faster"
    };
    assert!(why.starts_with(kept), "{why}");
    assert_eq!(dec.kind() == BackendKind::Cpu, cpu_faster, "{why}");
    assert_eq!(dec.len(), 0);
    let reference = reference("llama");
    let case = &reference.cases[0];
    let logits = pollster::block_on(dec.forward(&case.tokens)).unwrap();
    assert_close(&logits, case, 0, &why);

    // What the package keeps, and a later load that finds it: that backend alone, no new figures.
    let mut measured = measured.expect("both backends built");
    assert_eq!(measured.key, "this device and model");
    assert_eq!(measured.kind, dec.kind());
    assert!(why.ends_with(&measured.figures), "{why}");
    for kind in [BackendKind::Cpu, BackendKind::Webgpu] {
        measured.kind = kind;
        measured.at = Some("2026-12-06T23:00:00Z".into());
        let (mut dec, later) = pollster::block_on(wisp::assembly::measured_decoder(
            &config,
            &mut weights,
            shape,
            &measured,
        ))
        .unwrap();
        assert_eq!(dec.kind(), kind, "{later}");
        assert!(
            later.contains("measured faster on this device and model at 2026-12-06T23:00:00Z")
                && later.ends_with(&measured.figures),
            "{later}"
        );
        let logits = pollster::block_on(dec.forward(&case.tokens)).unwrap();
        assert_close(&logits, case, 0, &later);
    }
}

/// The millisecond figures of a reason, in order.
fn figures_of(reason: &str) -> Vec<f64> {
    reason
        .split(" ms")
        .filter_map(|part| part.rsplit(' ').next()?.parse().ok())
        .collect()
}
