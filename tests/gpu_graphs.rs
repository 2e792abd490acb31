//! wonnx on a real GPU adapter (lavapipe in CI): graphs checked against onnxruntime's outputs.

use std::collections::HashMap;
use std::path::PathBuf;

use serde::Deserialize;
use wisp::backend::{adapter_info, Feed, GraphSession};
use wisp::WispError;

#[derive(Deserialize)]
struct Values {
    dims: Vec<i64>,
    data: Vec<f32>,
}

#[derive(Deserialize)]
struct Fixture {
    inputs: HashMap<String, Values>,
    outputs: HashMap<String, Values>,
}

fn fixture(name: &str) -> (Vec<u8>, Fixture) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let model = std::fs::read(dir.join(format!("{name}.onnx"))).expect("fixture model");
    let json = std::fs::read_to_string(dir.join(format!("{name}.json"))).expect("fixture values");
    (model, serde_json::from_str(&json).expect("fixture json"))
}

fn feeds(f: &Fixture) -> HashMap<&str, Feed<'_>> {
    f.inputs
        .iter()
        .map(|(k, v)| (k.as_str(), Feed::F32(&v.data)))
        .collect()
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

fn run_fixture(
    name: &str,
) -> (
    Fixture,
    wisp::Result<HashMap<String, wisp::backend::Tensor>>,
) {
    let (model, fx) = fixture(name);
    let result = pollster::block_on(async {
        let session = GraphSession::from_bytes(&model).await?;
        session.run(&feeds(&fx)).await
    });
    (fx, result)
}

#[test]
fn adapter_is_reported() {
    let info =
        pollster::block_on(adapter_info()).expect("a GPU adapter (install mesa-vulkan-drivers)");
    println!(
        "adapter: {} / {} / {}",
        info.description, info.device, info.architecture
    );
    assert!(!info.description.is_empty());
    assert!(info.max_storage_buffer_binding_size >= 128 << 20);
}

#[test]
fn matmul_matches_onnxruntime() {
    let (fx, result) = run_fixture("matmul");
    let out = result.expect("matmul runs");
    let want = &fx.outputs["y"];
    let got = &out["y"];
    assert_eq!(got.dims, want.dims);
    let diff = max_abs_diff(&got.data, &want.data);
    assert!(diff <= 1e-4, "max abs diff {diff}");
    assert!(got.data.iter().any(|&v| v != 0.0));
}

#[test]
fn not_onnx_is_invalid_model() {
    let Err(err) = pollster::block_on(GraphSession::from_bytes(b"GGUF\x03\x00\x00\x00 not onnx"))
    else {
        panic!("garbage must not load");
    };
    assert_eq!(err.code(), "INVALID_MODEL", "{err}");
}

#[test]
fn wrong_inputs_are_named() {
    let (model, fx) = fixture("matmul");
    pollster::block_on(async {
        let session = GraphSession::from_bytes(&model).await.expect("loads");
        let mut bad = feeds(&fx);
        let short = &fx.inputs["a"].data[1..];
        bad.insert("a", Feed::F32(short));
        let err = session.run(&bad).await.expect_err("short input rejected");
        assert_eq!(
            err,
            WispError::InvalidInput("input 'a' needs 128 values (shape [8, 16]), got 127".into())
        );

        let mut extra = feeds(&fx);
        extra.insert("c", Feed::F32(&[0.0]));
        let err = session
            .run(&extra)
            .await
            .expect_err("unknown input rejected");
        assert_eq!(err.code(), "INVALID_INPUT");
        assert!(err.to_string().contains("'c'"), "{err}");

        let mut missing = feeds(&fx);
        missing.remove("b");
        let ints = [0i64; 128];
        let mut wrong_type = feeds(&fx);
        wrong_type.insert("a", Feed::I64(&ints));
        let err = session
            .run(&wrong_type)
            .await
            .expect_err("wrong element type rejected");
        assert_eq!(err.code(), "INVALID_INPUT");
        let err = session
            .run(&missing)
            .await
            .expect_err("missing input rejected");
        assert!(err.to_string().contains("'b'"), "{err}");

        // The session is still usable after rejected requests.
        let out = session.run(&feeds(&fx)).await.expect("runs");
        assert!(max_abs_diff(&out["y"].data, &fx.outputs["y"].data) <= 1e-4);
    });
}

/// Natively (naga + lavapipe) wonnx's Softmax shader compiles and is right; Chromium rejects it (see the
/// browser tests), which is why the decoder graphs never emit Softmax.
#[test]
fn softmax_matches_onnxruntime_on_native_vulkan() {
    let (fx, result) = run_fixture("matmul_softmax");
    let out = result.expect("matmul + softmax runs natively");
    let diff = max_abs_diff(&out["y"].data, &fx.outputs["y"].data);
    assert!(diff <= 1e-4, "max abs diff {diff}");
}
