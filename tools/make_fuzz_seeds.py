"""Writes the GGUF seeds of the fuzzer's `gguf` target (tests/fuzz/corpus/gguf/), with the Python `gguf` package.

Run once (not in CI), after `bash tools/fetch-smollm2.sh`; the outputs are committed:
    pip install gguf==0.19.0 numpy && python3 tools/make_fuzz_seeds.py

- smollm2-header.gguf: the first 4 KiB of SmolLM2-135M-Instruct.Q4_1.gguf, a real header cut inside its
  vocabulary (the reader must say it is truncated).
- llama-tiny.gguf, qwen2-tiny.gguf, qwen3-tiny.gguf: complete models small enough to load on every run
  (hidden size 32, one layer), with SmolLM2's real metadata (its keys, byte-level BPE vocabulary cut to 288
  tokens and the merges among them, chat template), the Qwen2.5 chat template for the Qwen ones, and random
  weights in F32, F16, Q8_0, Q4_0 and Q4_1, so that a run reaches the configuration, the tokenizer, the chat
  template and the CPU decoder.
- tiny.gguf (every tensor type) is copied from tests/fixtures/weights/.
"""
import pathlib
import shutil

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fuzz" / "corpus" / "gguf"
SMOLLM2 = ROOT / "models" / "smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
QWEN25_TEMPLATE = ROOT / "tests" / "fixtures" / "templates" / "qwen2.5.jinja"
rng = np.random.default_rng(20261203)

VOCAB = 288
HIDDEN, FF, HEADS, KV_HEADS, LAYERS = 32, 64, 2, 1, 1
HEAD_DIM = HIDDEN // HEADS


def field(reader, key):
    f = reader.fields[key]
    if f.types[0] == gguf.GGUFValueType.ARRAY:
        if f.types[-1] == gguf.GGUFValueType.STRING:
            return [bytes(f.parts[i]).decode() for i in f.data]
        return [f.parts[i][0].item() for i in f.data]
    if f.types[0] == gguf.GGUFValueType.STRING:
        return bytes(f.parts[f.data[0]]).decode()
    return f.parts[f.data[0]][0].item()


def vocabulary(reader):
    tokens = field(reader, "tokenizer.ggml.tokens")[:VOCAB]
    types = field(reader, "tokenizer.ggml.token_type")[:VOCAB]
    known = set(tokens)
    merges = [m for m in field(reader, "tokenizer.ggml.merges") if "".join(m.split(" ")) in known and all(p in known for p in m.split(" "))]
    return tokens, types, merges


def weights(arch):
    """(name, tensor) in PyTorch order; quantized ones as the raw bytes gguf.quants.quantize gives."""
    def rand(*shape, scale=0.2):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    out = [("token_embd.weight", T.Q8_0, rand(VOCAB, HIDDEN)), ("output_norm.weight", T.F32, 1 + rand(HIDDEN))]
    q, kv = HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    for layer in range(LAYERS):
        p = f"blk.{layer}."
        out += [
            (p + "attn_norm.weight", T.F32, 1 + rand(HIDDEN)),
            (p + "attn_q.weight", T.Q4_0, rand(q, HIDDEN)),
            (p + "attn_k.weight", T.Q4_1, rand(kv, HIDDEN)),
            (p + "attn_v.weight", T.F16, rand(kv, HIDDEN)),
            (p + "attn_output.weight", T.Q8_0, rand(HIDDEN, q)),
            (p + "ffn_norm.weight", T.F32, 1 + rand(HIDDEN)),
            (p + "ffn_gate.weight", T.Q4_0, rand(FF, HIDDEN)),
            (p + "ffn_up.weight", T.Q4_1, rand(FF, HIDDEN)),
            (p + "ffn_down.weight", T.Q8_0, rand(HIDDEN, FF)),
        ]
        if arch == "qwen2":
            out += [(p + f"attn_{x}.bias", T.F32, rand(n)) for x, n in (("q", q), ("k", kv), ("v", kv))]
        if arch == "qwen3":
            out += [(p + f"attn_{x}_norm.weight", T.F32, 1 + rand(HEAD_DIM)) for x in ("q", "k")]
    if arch != "llama":
        out.append(("output.weight", T.Q8_0, rand(VOCAB, HIDDEN)))
    return out


def write_model(arch, reader, template):
    path = OUT / f"{arch}-tiny.gguf"
    w = gguf.GGUFWriter(str(path), arch=arch)
    w.add_name(field(reader, "general.name") + " (tiny random weights)")
    w.add_block_count(LAYERS)
    w.add_context_length(field(reader, "llama.context_length"))
    w.add_embedding_length(HIDDEN)
    w.add_feed_forward_length(FF)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_freq_base(field(reader, "llama.rope.freq_base"))
    w.add_layer_norm_rms_eps(field(reader, "llama.attention.layer_norm_rms_epsilon"))
    tokens, types, merges = vocabulary(reader)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2" if arch != "llama" else field(reader, "tokenizer.ggml.pre"))
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(field(reader, "tokenizer.ggml.bos_token_id"))
    w.add_eos_token_id(field(reader, "tokenizer.ggml.eos_token_id"))
    w.add_chat_template(template)
    for name, qtype, x in weights(arch):
        if qtype == T.F32:
            w.add_tensor(name, x)
        elif qtype == T.F16:
            w.add_tensor(name, x.astype(np.float16))
        else:
            w.add_tensor(name, gguf.quants.quantize(x, qtype), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    reader = gguf.GGUFReader(str(SMOLLM2))
    (OUT / "smollm2-header.gguf").write_bytes(SMOLLM2.read_bytes()[:4096])
    write_model("llama", reader, field(reader, "tokenizer.chat_template"))
    qwen = QWEN25_TEMPLATE.read_text()
    write_model("qwen2", reader, qwen)
    write_model("qwen3", reader, qwen)
    shutil.copy(ROOT / "tests" / "fixtures" / "weights" / "tiny.gguf", OUT / "tiny.gguf")
    for p in sorted(OUT.iterdir()):
        print(f"{p.stat().st_size:8d}  {p.relative_to(ROOT)}")
