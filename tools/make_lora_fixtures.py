"""A small random LoRA adapter (llama.cpp's GGUF format) over the quantized fixture model, with llama.cpp's
logits for the base plus the adapter: the reference Wisp's adapters are checked against.

Run once (not in CI); outputs are committed under tests/fixtures/decoders/:
    CMAKE_ARGS="-DGGML_NATIVE=ON" pip install llama-cpp-python==0.3.36 gguf numpy
    python3 tools/make_lora_fixtures.py

llama.cpp needs a vocabulary to load a model, and llama-quant.gguf has none (Wisp's tests feed token ids):
llama.cpp gets a copy with 256 byte-level tokens added to its metadata (a temporary file); the tensors are
the same bytes. Every projection of both layers and the untied output head are adapted, rank 4, in f16,
so the test covers quantized products with low-rank terms, the q/k row order and the head.
"""
import json
import pathlib
import tempfile

import gguf
import numpy as np

from make_decoder_fixtures import OUT, SEQUENCES

BASE = OUT / "llama-quant.gguf"
ADAPTER = OUT / "llama-quant.lora.gguf"
RANK, ALPHA = 4, 8.0


def with_vocab(src, dst):
    """`src` with a 256-token byte-level BPE vocabulary (what llama.cpp needs to load it)."""
    r = gguf.GGUFReader(src)
    w = gguf.GGUFWriter(dst, "llama")
    for k, f in r.fields.items():
        if k.startswith("GGUF.") or k == "general.architecture":
            continue
        v = f.parts[f.data[0]]
        if f.types[0] == gguf.GGUFValueType.UINT32:
            w.add_uint32(k, int(v[0]))
        elif f.types[0] == gguf.GGUFValueType.FLOAT32:
            w.add_float32(k, float(v[0]))
        else:
            raise SystemExit(f"unexpected key {k}")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list([bytes_to_unicode()[b] for b in range(256)])
    w.add_token_types([gguf.TokenType.NORMAL] * 256)
    w.add_token_merges([])
    w.add_bos_token_id(0)
    w.add_eos_token_id(1)
    for t in r.tensors:
        data = np.array(t.data)
        f32 = t.tensor_type == gguf.GGMLQuantizationType.F32
        w.add_tensor(t.name, data, raw_shape=data.shape if f32 else None, raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def bytes_to_unicode():
    """GPT-2's byte-level alphabet: each byte as a printable character."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def write_adapter(rng):
    r = gguf.GGUFReader(BASE)
    w = gguf.GGUFWriter(str(ADAPTER), "llama")
    w.add_string("general.type", "adapter")
    w.add_string("adapter.type", "lora")
    w.add_float32("adapter.lora.alpha", ALPHA)
    for t in r.tensors:
        if not (t.name.startswith("blk.") and not t.name.endswith("norm.weight")) and t.name != "output.weight":
            continue
        rows, cols = int(t.shape[1]), int(t.shape[0])  # GGUF dims are innermost first
        a = rng.standard_normal((RANK, cols)) * 0.08
        b = rng.standard_normal((rows, RANK)) * 0.08
        w.add_tensor(t.name + ".lora_a", a.astype(np.float16))
        w.add_tensor(t.name + ".lora_b", b.astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_bad_adapters():
    """Adapters that must be refused with INVALID_ADAPTER, one flaw each (tests/lora.rs names the flaw)."""
    d = OUT / "bad-adapters"
    d.mkdir(exist_ok=True)
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((1, 256)).astype(np.float16), rng.standard_normal((256, 1)).astype(np.float16)
    cases = {
        "other-arch": ("qwen2", 8.0, {"blk.0.attn_q.weight.lora_a": a, "blk.0.attn_q.weight.lora_b": b}),
        "missing-half": ("llama", 8.0, {"blk.0.attn_q.weight.lora_a": a}),
        "wrong-shape": ("llama", 8.0, {"blk.0.attn_k.weight.lora_a": a, "blk.0.attn_k.weight.lora_b": b}),
        "no-such-weight": ("llama", 8.0, {"blk.9.attn_q.weight.lora_a": a, "blk.9.attn_q.weight.lora_b": b}),
        "bad-alpha": ("llama", -1.0, {"blk.0.attn_q.weight.lora_a": a, "blk.0.attn_q.weight.lora_b": b}),
        "ranks-differ": ("llama", 8.0, {"blk.0.attn_q.weight.lora_a": np.vstack([a, a]),
                                        "blk.0.attn_q.weight.lora_b": b}),
    }
    for name, (arch, alpha, tensors) in cases.items():
        w = gguf.GGUFWriter(str(d / f"{name}.gguf"), arch)
        w.add_string("general.type", "adapter")
        w.add_string("adapter.type", "lora")
        w.add_float32("adapter.lora.alpha", alpha)
        for k, v in tensors.items():
            w.add_tensor(k, v)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()


def llama_cpp_logits(model, adapter, ids):
    from llama_cpp import Llama

    llm = Llama(model_path=model, lora_path=adapter, n_ctx=64, n_batch=64, n_threads=2, logits_all=True,
                verbose=False, use_mmap=False)
    llm.eval(ids)
    return np.array(llm.scores[: len(ids)], dtype=np.float32)


def main():
    write_adapter(np.random.default_rng(7))
    write_bad_adapters()
    with tempfile.TemporaryDirectory() as tmp:
        base = str(pathlib.Path(tmp) / "base.gguf")
        with_vocab(str(BASE), base)
        cases = []
        for ids in SEQUENCES:
            logits = llama_cpp_logits(base, str(ADAPTER), ids)
            plain = llama_cpp_logits(base, None, ids)
            cases.append({"tokens": ids, "logits": np.round(logits, 6).tolist(),
                          "argmax": logits.argmax(-1).tolist()})
            print("adapter moves the logits by", float(np.abs(logits - plain).max()),
                  "spread", float(np.ptp(logits, axis=-1).min()))
    doc = {"reference": "llama.cpp (llama-cpp-python 0.3.36) with the adapter llama-quant.lora.gguf "
                        "(tools/make_lora_fixtures.py)", "rank": RANK, "alpha": ALPHA, "cases": cases}
    (OUT / "llama-quant-lora.json").write_text(json.dumps(doc) + "\n")
    print("ok", [c["argmax"][:5] for c in cases])


if __name__ == "__main__":
    main()
