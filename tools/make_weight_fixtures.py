"""Writes the small weight files tests/weights.rs reads, with reference values from the Python `gguf` package.

Run once (not in CI); the outputs are committed under tests/fixtures/weights/:
    pip install gguf==0.19.0 numpy safetensors && python3 tools/make_weight_fixtures.py

- tiny.gguf: metadata of every value type and one tensor of each ggml type the Rust reader decodes. Types
  the package can quantize are quantized from random floats; the K-quants get random raw blocks with small
  finite f16 scales.
- tiny.gguf.json: expected metadata, and per tensor its shape (outermost first), ggml type, data offset and
  where its reference values lie in tiny.gguf.f32.
- tiny.gguf.f32: the reference values, read back with gguf.GGUFReader and decoded by gguf.quants.dequantize,
  as little-endian f32, tensor after tensor.
- tiny.safetensors (+ .json, .f32): the same idea for F32/F16/BF16 written by the safetensors package.
"""
import json
import pathlib

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T
from safetensors.numpy import save_file

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "weights"
rng = np.random.default_rng(20261202)

METADATA = [
    # (key, value, GGUF value type, sub type for arrays)
    ("general.architecture", "llama", gguf.GGUFValueType.STRING, None),
    ("general.name", "tiny fixture ✓", gguf.GGUFValueType.STRING, None),
    ("test.u8", 200, gguf.GGUFValueType.UINT8, None),
    ("test.i8", -100, gguf.GGUFValueType.INT8, None),
    ("test.u16", 60000, gguf.GGUFValueType.UINT16, None),
    ("test.i16", -30000, gguf.GGUFValueType.INT16, None),
    ("llama.block_count", 2, gguf.GGUFValueType.UINT32, None),
    ("test.i32", -123456, gguf.GGUFValueType.INT32, None),
    ("test.u64", 2**40 + 7, gguf.GGUFValueType.UINT64, None),
    ("test.i64", -(2**40) - 7, gguf.GGUFValueType.INT64, None),
    ("llama.rope.freq_base", 10000.5, gguf.GGUFValueType.FLOAT32, None),
    ("test.f64", 0.1, gguf.GGUFValueType.FLOAT64, None),
    ("test.true", True, gguf.GGUFValueType.BOOL, None),
    ("test.false", False, gguf.GGUFValueType.BOOL, None),
    ("tokenizer.ggml.tokens", ["<s>", "</s>", "hello", " wörld", "\n"], gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.STRING),
    ("tokenizer.ggml.token_type", [3, 3, 1, 1, 6], gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.INT32),
    ("tokenizer.ggml.scores", [0.0, -1.5, -2.25, 3.0, 1e-3], gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.FLOAT32),
    ("test.nested", [["a", "bc"], ["", "déf", "g"]], gguf.GGUFValueType.ARRAY, None),
]

ALIGNMENT = 64


def k_quant_blocks(qtype, n_blocks, rng=rng):
    """Random raw blocks with the f16 scale fields replaced by small finite values."""
    _, type_size = gguf.GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    scales = lambda n: rng.uniform(-0.05, 0.05, size=(n_blocks, n)).astype(np.float16).view(np.uint8)
    if qtype in (T.Q4_K, T.Q5_K, T.Q2_K):
        # d and dmin lead the block (Q2_K keeps them at the end).
        at = 0 if qtype != T.Q2_K else type_size - 4
        raw[:, at:at + 4] = scales(2)
    elif qtype in (T.Q6_K, T.Q3_K):
        raw[:, type_size - 2:] = scales(1)
    return raw


def tensors():
    """(name, pytorch-order shape, ggml type, data to hand GGUFWriter)."""
    out = []
    x = rng.standard_normal((2, 3, 64)).astype(np.float32)
    out.append(("f32_3d", x.shape, T.F32, x))
    x = rng.standard_normal((3, 64)).astype(np.float32)
    out.append(("f16", x.shape, T.F16, x.astype(np.float16)))
    for qtype in (T.BF16, T.Q8_0, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1):
        x = rng.standard_normal((3, 64)).astype(np.float32)
        out.append((qtype.name.lower(), x.shape, qtype, gguf.quants.quantize(x, qtype)))
    for qtype in (T.Q4_K, T.Q5_K, T.Q6_K, T.Q2_K):
        shape = (2, 512)
        blocks = k_quant_blocks(qtype, shape[0] * shape[1] // 256)
        out.append((qtype.name.lower(), shape, qtype, blocks.reshape((shape[0], -1))))
    # Added later, with its own generator so that the tensors before it and the safetensors file keep
    # their bytes.
    blocks = k_quant_blocks(T.Q3_K, 4, np.random.default_rng(3))
    out.append(("q3_k", (2, 512), T.Q3_K, blocks.reshape((2, -1))))
    return out


def write_gguf():
    path = OUT / "tiny.gguf"
    w = gguf.GGUFWriter(str(path), arch=None)
    w.add_custom_alignment(ALIGNMENT)
    for key, value, vtype, sub in METADATA:
        w.add_key_value(key, value, vtype, sub_type=sub)
    specs = tensors()
    for name, shape, qtype, data in specs:
        w.add_tensor(name, data, raw_dtype=qtype if qtype not in (T.F32, T.F16) else None)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    reader = gguf.GGUFReader(str(path))
    refs, entries, at = [], [], 0
    for t in reader.tensors:
        spec = next(s for s in specs if s[0] == t.name)
        shape = [int(d) for d in reversed(t.shape)]
        assert shape == list(spec[1]), (t.name, shape, spec[1])
        entry = {"name": t.name, "shape": shape, "ggml_type": t.tensor_type.name, "offset": int(t.data_offset - reader.data_offset)}
        values = gguf.quants.dequantize(t.data, t.tensor_type).astype("<f4").ravel()
        assert np.isfinite(values).all(), t.name
        entry.update(start=at, len=int(values.size))
        refs.append(values)
        at += values.size
        entries.append(entry)
    np.concatenate(refs).tofile(OUT / "tiny.gguf.f32")

    metadata = {"general.alignment": ALIGNMENT}
    metadata.update({key: value for key, value, _, _ in METADATA})
    # JSON cannot hold float32 exactly; store the f32 values as their bit patterns.
    metadata["llama.rope.freq_base"] = {"f32_bits": int(np.float32(10000.5).view(np.uint32))}
    metadata["tokenizer.ggml.scores"] = {"f32_bits": [int(v) for v in np.array([0.0, -1.5, -2.25, 3.0, 1e-3], dtype="<f4").view(np.uint32)]}
    expected = {
        "version": int(reader.fields["GGUF.version"].parts[-1][0]),
        "alignment": ALIGNMENT,
        "data_offset": int(reader.data_offset),
        "metadata": metadata,
        "metadata_keys": [k for k in reader.fields if not k.startswith("GGUF.")],
        "tensors": entries,
    }
    (OUT / "tiny.gguf.json").write_text(json.dumps(expected, indent=1, ensure_ascii=False) + "\n")


def write_safetensors():
    x32 = rng.standard_normal((2, 3)).astype(np.float32)
    x16 = rng.standard_normal((4, 2)).astype(np.float16)
    # numpy has no bfloat16: keep the top 16 bits of f32 values, which is exactly what bf16 stores.
    bf = (rng.standard_normal((3, 1, 2)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    i32 = np.arange(4, dtype=np.int32)
    save_file({"a.f32": x32, "b.f16": x16, "c.bf16": bf, "d.i32": i32}, str(OUT / "tiny.safetensors"))
    # Rewrite the dtype of the bf16 tensor: the numpy front end only knows U16.
    raw = bytearray((OUT / "tiny.safetensors").read_bytes())
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    header["c.bf16"]["dtype"] = "BF16"
    new = json.dumps(header, separators=(",", ":")).encode()
    new += b" " * (n - len(new))
    assert len(new) == n
    raw[8:8 + n] = new
    (OUT / "tiny.safetensors").write_bytes(bytes(raw))

    bf32 = (bf.astype(np.uint32) << 16).view(np.float32)
    refs = [x32.ravel(), x16.astype(np.float32).ravel(), bf32.ravel()]
    entries, at = [], 0
    for name, arr, dtype, ref in zip(["a.f32", "b.f16", "c.bf16"], [x32, x16, bf], ["F32", "F16", "BF16"], refs):
        entries.append({"name": name, "shape": list(arr.shape), "dtype": dtype, "start": at, "len": int(ref.size)})
        at += ref.size
    entries.append({"name": "d.i32", "shape": [4], "dtype": "I32"})
    np.concatenate(refs).astype("<f4").tofile(OUT / "tiny.safetensors.f32")
    (OUT / "tiny.safetensors.json").write_text(json.dumps({"tensors": entries}, indent=1) + "\n")


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    write_gguf()
    write_safetensors()
    for p in sorted(OUT.iterdir()):
        print(f"{p.stat().st_size:8d}  {p.relative_to(OUT.parent.parent.parent)}")
