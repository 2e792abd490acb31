"""Two tiny Llamas as GGUF files whose weights are in every quantized type the CPU backend keeps quantized,
with reference logits of their dequantized weights: llama-quant (Q8_0, Q4_0, Q4_1, Q4_K, Q5_0, IQ4_NL,
IQ4_XS; F16 embeddings; also the base of tools/make_lora_fixtures.py) and llama-quant-k (Q5_1, Q5_K, Q6_K,
Q3_K, Q2_K; Q3_K embeddings, a Q6_K head), written after it with its own generator so that llama-quant
keeps its bytes.

Run once (not in CI); outputs are committed under tests/fixtures/decoders/:
    pip install numpy onnx onnxruntime gguf && python3 tools/make_quant_fixtures.py

The reference is independent of Wisp: the Python `gguf` package dequantizes each tensor, and the same
onnxruntime graph as tools/make_decoder_fixtures.py runs the f32 model. The GGUF holds the q and k rows
permuted as llama.cpp's converter writes them (rotary pairs adjacent); the reference gets them back in
Hugging Face order, which only reorders rows, so the dequantized values are the same.
"""
import json
import pathlib

import gguf
import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf.quants import dequantize, quantize

from make_decoder_fixtures import OUT, SEQUENCES, Reference, weights

# Rows of 256 and 512 columns: whole Q4_K super-blocks.
CFG = dict(model_type="llama", hidden_size=256, intermediate_size=512, num_attention_heads=4,
           num_key_value_heads=2, num_hidden_layers=2, vocab_size=256, rms_norm_eps=1e-5,
           rope_theta=10000.0, tie_word_embeddings=False, max_position_embeddings=256)

# Each layer's projections in a different mix, so every type meets every kind of product.
LAYER_TYPES = [
    {"q_proj": Q.Q8_0, "k_proj": Q.Q4_0, "v_proj": Q.Q4_1, "o_proj": Q.Q4_K,
     "gate_proj": Q.Q5_0, "up_proj": Q.IQ4_NL, "down_proj": Q.IQ4_XS},
    {"q_proj": Q.Q4_K, "k_proj": Q.Q8_0, "v_proj": Q.IQ4_XS, "o_proj": Q.Q4_0,
     "gate_proj": Q.Q4_1, "up_proj": Q.Q5_0, "down_proj": Q.Q4_K},
]
# The second model: the types of llama.cpp's K-quant presets that llama-quant lacks.
K_LAYER_TYPES = [
    {"q_proj": Q.Q6_K, "k_proj": Q.Q5_K, "v_proj": Q.Q5_1, "o_proj": Q.Q3_K,
     "gate_proj": Q.Q2_K, "up_proj": Q.Q6_K, "down_proj": Q.Q5_K},
    {"q_proj": Q.Q2_K, "k_proj": Q.Q3_K, "v_proj": Q.Q6_K, "o_proj": Q.Q5_1,
     "gate_proj": Q.Q5_K, "up_proj": Q.Q3_K, "down_proj": Q.Q2_K},
]
HF_TO_GGUF = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
              "gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down"}


def permute(w, heads):
    """llama.cpp's converter order for q and k rows: the two halves of each head interleaved."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute(w, heads):
    return w.reshape(heads, w.shape[0] // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def random_q4_k(rows, cols, rng):
    """Random Q4_K super-blocks of weights near the others' scale: gguf-py cannot quantize to Q4_K, and
    any bytes are a valid block once d and dmin are sane (d, dmin, 12 bytes of 6-bit scales and mins,
    128 bytes of nibbles)."""
    blocks = rows * cols // 256
    d = (np.abs(rng.standard_normal(blocks)) * 4e-4 + 2e-4).astype(np.float16)
    dmin = (np.abs(rng.standard_normal(blocks)) * 4e-4 + 2e-4).astype(np.float16)
    scales = rng.integers(0, 256, (blocks, 12), dtype=np.uint8)
    qs = rng.integers(0, 256, (blocks, 128), dtype=np.uint8)
    raw = np.concatenate([d.view(np.uint8).reshape(blocks, 2), dmin.view(np.uint8).reshape(blocks, 2),
                          scales, qs], axis=1)
    return raw.reshape(rows, cols // 256 * 144)


def random_iq4(rows, cols, qtype, rng):
    """Random IQ4_NL blocks (d, 16 bytes of 4-bit indices) or IQ4_XS super-blocks (d, scales_h, scales_l,
    128 bytes of indices), with d sized so that weights stay near the others' scale; gguf-py cannot quantize
    to these types, and any indices and scales make a valid block."""
    if qtype == Q.IQ4_NL:
        blocks = rows * cols // 32
        d = (np.abs(rng.standard_normal(blocks)) * 4e-4 + 2e-4).astype(np.float16)
        raw = np.concatenate([d.view(np.uint8).reshape(blocks, 2), rng.integers(0, 256, (blocks, 16), dtype=np.uint8)], axis=1)
        return raw.reshape(rows, cols // 32 * 18)
    blocks = rows * cols // 256
    d = (np.abs(rng.standard_normal(blocks)) * 1.5e-5 + 1e-5).astype(np.float16)
    rest = rng.integers(0, 256, (blocks, 2 + 4 + 128), dtype=np.uint8)
    raw = np.concatenate([d.view(np.uint8).reshape(blocks, 2), rest], axis=1)
    return raw.reshape(rows, cols // 256 * 136)


# Byte offsets of the f16 `d` (and `dmin`) in a block of each K-quant made from random bytes.
K_SCALES = {Q.Q5_K: (0, 2), Q.Q6_K: (208,), Q.Q3_K: (108,), Q.Q2_K: (80, 82)}


def random_k(w, qtype, rng):
    """Random blocks of a K-quant gguf-py cannot quantize to, shaped as `w`, with `d` (and `dmin`) per block
    set so that the weights spread about as much as `w`'s: any other bytes make a valid block."""
    block_len, size = gguf.GGML_QUANT_SIZES[qtype]
    blocks = w.size // block_len
    raw = rng.integers(0, 256, (blocks, size), dtype=np.uint8)
    set_scales = lambda d: [raw.__setitem__((slice(None), slice(at, at + 2)), d.view(np.uint8).reshape(blocks, 2))
                            for at in K_SCALES[qtype]]
    set_scales(np.ones(blocks, dtype=np.float16))
    unit = dequantize(raw, qtype).std()
    set_scales((w.std() / unit * rng.uniform(0.5, 1.5, blocks)).astype(np.float16))
    return raw.reshape(w.shape[0], -1)


def quantized(w, qtype, rng):
    if qtype == Q.Q4_K:
        return random_q4_k(*w.shape, rng)
    if qtype in (Q.IQ4_NL, Q.IQ4_XS):
        return random_iq4(*w.shape, qtype, rng)
    if qtype in K_SCALES:
        return random_k(w, qtype, rng)
    return quantize(w, qtype)


def llama_writer(path, cfg):
    """A GGUF writer for a Llama-like model (its `model_type`: llama, qwen2) of Hugging Face configuration
    `cfg`, its hyper-parameters written."""
    writer = gguf.GGUFWriter(str(path), cfg["model_type"])
    writer.add_context_length(cfg["max_position_embeddings"])
    writer.add_embedding_length(cfg["hidden_size"])
    writer.add_block_count(cfg["num_hidden_layers"])
    writer.add_feed_forward_length(cfg["intermediate_size"])
    writer.add_head_count(cfg["num_attention_heads"])
    writer.add_head_count_kv(cfg["num_key_value_heads"])
    writer.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    writer.add_rope_freq_base(cfg["rope_theta"])
    return writer


def write_model(name, rng, layer_types, embd_type, head_type):
    hf = weights(CFG, rng)
    writer = llama_writer(OUT / f"{name}.gguf", CFG)
    reference = {}
    types = {}

    def add(gguf_name, hf_name, data, qtype, heads=None):
        shape = hf[hf_name].shape
        writer.add_tensor(gguf_name, data, raw_shape=data.shape if qtype == Q.F32 else None, raw_dtype=qtype)
        back = dequantize(data, qtype).reshape(shape).astype(np.float32)
        reference[hf_name] = unpermute(back, heads) if heads else back
        types[gguf_name] = qtype.name

    embd = hf["model.embed_tokens.weight"]
    add("token_embd.weight", "model.embed_tokens.weight",
        embd.astype(np.float16) if embd_type == Q.F16 else quantized(embd, embd_type, rng), embd_type)
    add("output_norm.weight", "model.norm.weight", hf["model.norm.weight"], Q.F32)
    add("output.weight", "lm_head.weight", quantized(hf["lm_head.weight"], head_type, rng), head_type)
    for i, layer_types in enumerate(layer_types):
        p = f"model.layers.{i}."
        add(f"blk.{i}.attn_norm.weight", p + "input_layernorm.weight", hf[p + "input_layernorm.weight"], Q.F32)
        add(f"blk.{i}.ffn_norm.weight", p + "post_attention_layernorm.weight",
            hf[p + "post_attention_layernorm.weight"], Q.F32)
        for proj, qtype in layer_types.items():
            hf_name = p + ("self_attn." if proj.endswith(("q_proj", "k_proj", "v_proj", "o_proj")) else "mlp.") + proj + ".weight"
            heads = {"q_proj": CFG["num_attention_heads"], "k_proj": CFG["num_key_value_heads"]}.get(proj)
            w = hf[hf_name]
            w = permute(w, heads) if heads else w
            data = quantized(w, qtype, rng)
            add(f"blk.{i}.{HF_TO_GGUF[proj]}.weight", hf_name, data, qtype, heads)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    ref = Reference(CFG, reference)
    cases = []
    for ids in SEQUENCES:
        logits = ref.logits(ids)
        cases.append({"tokens": ids, "logits": np.round(logits, 6).tolist(), "argmax": logits.argmax(-1).tolist()})
    doc = {"reference": "gguf-py dequantization, then the f32 model in onnxruntime "
                        "(tools/make_quant_fixtures.py)",
           "types": types, "cases": cases}
    (OUT / f"{name}.json").write_text(json.dumps(doc) + "\n")
    print(name, "ok", sorted(set(types.values())), [c["argmax"][:5] for c in cases])



def main():
    write_model("llama-quant", np.random.default_rng(2024), LAYER_TYPES, Q.F16, Q.Q8_0)
    write_model("llama-quant-k", np.random.default_rng(2025), K_LAYER_TYPES, Q.Q3_K, Q.Q6_K)


if __name__ == "__main__":
    main()
