//! The native floor for benches-web/: the same decoders as the package, without a browser. wonnx on
//! whatever Vulkan adapter wgpu finds (lavapipe on a machine without a GPU), or the CPU kernels, one
//! thread. Reads a JSON spec, prints one JSON line:
//!     cargo run --release --example native_bench -- spec.json
//! spec: { "weights", "config"?, "backend": "webgpu"|"cpu", "chunkLen", "contextLen", "decode",
//!         "reps", "warmup", "prompts": [[ids…], …] } (paths relative to the repository). The first prompt also decodes
//! `decode` tokens; the others only prefill. Every run starts from an empty cache.

#[path = "../tests/support/bandwidth.rs"]
mod bandwidth;

use std::time::Instant;

use serde::Deserialize;
use serde_json::json;
use wisp::backend::cpu::CpuDecoder;
use wisp::backend::Decoder;
use wisp::graph::DecoderShape;
use wisp::model::ModelWeights;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Spec {
    weights: String,
    config: Option<String>,
    backend: String,
    chunk_len: usize,
    context_len: usize,
    decode: usize,
    prompts: Vec<Vec<u32>>,
    /// Timed runs per prompt, after one untimed warm-up unless `warmup` is false.
    reps: usize,
    warmup: bool,
}

fn argmax(v: &[f32]) -> u32 {
    v.iter()
        .enumerate()
        .fold(0, |best, (i, &x)| if x > v[best] { i } else { best }) as u32
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: native_bench spec.json");
    let spec: Spec = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let root = env!("CARGO_MANIFEST_DIR");
    let bytes = std::fs::read(format!("{root}/{}", spec.weights)).unwrap();
    let config = spec
        .config
        .as_ref()
        .map(|c| std::fs::read_to_string(format!("{root}/{c}")).unwrap());

    let t = Instant::now();
    let (config, mut weights) = ModelWeights::load(&bytes, config.as_deref()).unwrap();
    // Weight bytes per pass are the CPU decoder's (the format it keeps: Q4_1 stays Q4_1, F16 stays F16).
    let cpu = CpuDecoder::new(&config, &weights, spec.context_len).unwrap();
    let weight_bytes = cpu.weight_bytes_per_pass();
    let mut decoder = match spec.backend.as_str() {
        "cpu" => Decoder::Cpu(Box::new(cpu)),
        _ => {
            drop(cpu);
            let shape = DecoderShape {
                chunk_len: spec.chunk_len,
                cache_len: spec.context_len,
            };
            pollster::block_on(Decoder::new(&config, &mut weights, shape)).unwrap()
        }
    };
    let load_ms = ms(t);

    let mut runs = Vec::new();
    for (i, ids) in spec.prompts.iter().enumerate() {
        let new_tokens = if i == 0 { spec.decode } else { 1 };
        let mut samples = Vec::new();
        let mut tokens = Vec::new();
        for _ in 0..spec.reps + usize::from(spec.warmup) {
            decoder.seek(0).unwrap();
            let t = Instant::now();
            let logits = pollster::block_on(decoder.forward_last(ids)).unwrap();
            let ttft = ms(t);
            tokens = vec![argmax(&logits)];
            let t = Instant::now();
            while tokens.len() < new_tokens {
                let logits =
                    pollster::block_on(decoder.forward_last(&[*tokens.last().unwrap()])).unwrap();
                tokens.push(argmax(&logits));
            }
            samples.push(json!({ "ttftMs": ttft, "decodeMs": ms(t) }));
        }
        if spec.warmup {
            samples.remove(0);
        }
        runs.push(json!({ "promptTokens": ids.len(), "tokens": tokens, "samples": samples }));
    }
    let adapter = match &decoder {
        Decoder::Gpu(_) => pollster::block_on(wisp::backend::adapter_info())
            .map(|a| a.description)
            .unwrap_or_default(),
        Decoder::Cpu(_) => "cpu, 1 thread".to_string(),
    };
    println!(
        "{}",
        json!({
            "backend": spec.backend,
            "adapter": adapter,
            "loadMs": load_ms,
            "weightBytesPerPass": weight_bytes,
            "memcpyBytesPerSec": bandwidth::memcpy_bandwidth(),
            "runs": runs,
        })
    );
}
