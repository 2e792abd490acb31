"""Small random LoRA adapters (llama.cpp's GGUF format) for the tiny fixture models, with llama.cpp's logits
for a base plus its adapter: the reference Wisp's adapters are checked against.

Run once (not in CI); outputs are committed under tests/fixtures/decoders/:
    CMAKE_ARGS="-DGGML_NATIVE=ON" pip install llama-cpp-python==0.3.36 gguf numpy
    python3 tools/make_lora_fixtures.py

- llama.lora.gguf over the f32 Llama (llama.safetensors, Hugging Face's row order): llama.cpp runs the
  same weights from llama.gguf (q and k rows permuted as its converter writes them, a byte-level
  vocabulary, since llama.cpp loads no model without one) with the adapter: llama-lora.json. f32 weights
  on both sides, so the comparison is tight; Wisp runs both bases, so the adapter's q/k rows meet Hugging
  Face's order (safetensors) and llama.cpp's (GGUF, as SmolLM2 loads).
- llama-quant.lora.gguf over the quantized fixture (llama-quant.gguf), every projection and the untied
  head: no llama.cpp reference (llama.cpp's own activation rounding puts its base 3% of a row's spread
  from the exact dequantized model, more than the check would allow), but the CPU backend's quantized
  products with low-rank terms are checked against the GPU backend's merged f32 weights.
- bad-adapters/: one flaw each, refused with INVALID_ADAPTER.
Rank 4, alpha 8, f16 tensors.
"""
import json
import pathlib

import gguf
import numpy as np

from make_decoder_fixtures import OUT, SEQUENCES
from make_quant_fixtures import HF_TO_GGUF, llama_writer, permute

BASE = OUT / "llama-quant.gguf"
ADAPTER = OUT / "llama-quant.lora.gguf"
RANK, ALPHA = 4, 8.0


def add_vocab(w):
    """A 256-token byte-level BPE vocabulary: llama.cpp loads no model without one (the tests feed ids)."""
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list([bytes_to_unicode()[b] for b in range(256)])
    w.add_token_types([gguf.TokenType.NORMAL] * 256)
    w.add_token_merges(["a b"])  # llama.cpp needs the key; one merge it never uses
    w.add_bos_token_id(0)
    w.add_eos_token_id(1)


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


def write_adapter(base, out, rng):
    """A random rank-4 adapter (f16) of every projection of `base` and its untied head."""
    r = gguf.GGUFReader(base)
    w = gguf.GGUFWriter(str(out), "llama")
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


def plain_buffers():
    """llama.cpp's extra buffer types (AMX, repacked CPU weights) cannot hold an adapted weight's product
    and crash with one here: models load into the plain CPU buffers, as llama.cpp's own LoRA tests run."""
    import llama_cpp.llama_cpp as lib

    default = lib.llama_model_default_params
    if getattr(default, "plain", False):
        return

    def params():
        p = default()
        p.use_extra_bufts = False
        return p

    params.plain = True
    lib.llama_model_default_params = params


def llama_cpp_logits(model, adapter, ids):
    from llama_cpp import Llama

    plain_buffers()
    llm = Llama(model_path=model, lora_path=adapter, n_ctx=64, n_batch=64, n_threads=2, logits_all=True,
                verbose=False, use_mmap=False)
    llm.eval(ids)
    return np.array(llm.scores[: len(ids)], dtype=np.float32)


def f32_base(dst):
    """The tiny f32 Llama fixture (llama.safetensors) as a GGUF file for llama.cpp: q and k rows permuted as
    llama.cpp's converter writes them, tied embeddings, a byte-level vocabulary."""
    from safetensors.numpy import load_file

    cfg = json.loads((OUT / "llama.config.json").read_text())
    hf = load_file(OUT / "llama.safetensors")
    w = llama_writer(dst, cfg)
    add_vocab(w)
    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight"}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        names[p + "input_layernorm.weight"] = f"blk.{i}.attn_norm.weight"
        names[p + "post_attention_layernorm.weight"] = f"blk.{i}.ffn_norm.weight"
        for proj, part in HF_TO_GGUF.items():
            kind = "self_attn." if proj in ("q_proj", "k_proj", "v_proj", "o_proj") else "mlp."
            names[p + kind + proj + ".weight"] = f"blk.{i}.{part}.weight"
    for hf_name, name in names.items():
        t = hf[hf_name].astype(np.float32)
        heads = {"attn_q": cfg["num_attention_heads"], "attn_k": cfg["num_key_value_heads"]}.get(name.split(".")[-2])
        if heads:
            t = permute(t, heads)
        w.add_tensor(name, t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def reference(base, adapter, name, note):
    cases = []
    for ids in SEQUENCES:
        logits = llama_cpp_logits(base, adapter, ids)
        plain = llama_cpp_logits(base, None, ids)
        cases.append({"tokens": ids, "logits": np.round(logits, 6).tolist(), "argmax": logits.argmax(-1).tolist()})
        print(name, "adapter moves the logits by", float(np.abs(logits - plain).max()),
              "spread", float(np.ptp(logits, axis=-1).min()))
    doc = {"reference": f"llama.cpp (llama-cpp-python 0.3.36) with the adapter {note} (tools/make_lora_fixtures.py)",
           "rank": RANK, "alpha": ALPHA, "cases": cases}
    (OUT / f"{name}.json").write_text(json.dumps(doc) + "\n")


def smollm2():
    """tests/fixtures/smollm2/wisp-agent.json: SmolLM2-135M-Instruct plus models/wisp-agent/adapter.gguf on
    two held-out prompts: the top logits of PyTorch (transformers' dequantization of the GGUF, the trained
    peft adapter of tools/agent/out/adapter merged: an independent check of the GGUF export too) and
    llama.cpp's greedy answer with the exported adapter."""
    import sys

    import torch
    from peft import PeftModel

    sys.path.insert(0, str(pathlib.Path(__file__).parent / "agent"))
    from common import BASE_DIR, BASE_FILE, MODEL_DIR, OUT as AGENT_OUT, load_base, render
    from llama_cpp import Llama

    tok, model = load_base()
    model = PeftModel.from_pretrained(model, AGENT_OUT / "adapter").merge_and_unload().eval()
    evals = [json.loads(x) for x in open(AGENT_OUT / "eval.jsonl")]
    picked = [next(c for c in evals if c["category"] == k) for k in ("call", "no_call")]
    plain_buffers()
    llm = Llama(model_path=str(BASE_DIR / BASE_FILE), lora_path=str(MODEL_DIR / "adapter.gguf"), n_ctx=2048,
                n_threads=2, verbose=False)
    cases = []
    for c in picked:
        text = render(c["messages"], c["tools"], add_generation_prompt=True)
        ids = tok(text, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            last = model(torch.tensor([ids])).logits[0, -1].float().numpy()
        top = np.argsort(-last)[:10]
        out = llm.create_completion(ids, max_tokens=24, temperature=0.0,
                                    top_k=1, stop=["<|im_end|>"])
        greedy = out["choices"][0]["text"]
        cases.append({"ids": ids, "top_ids": top.tolist(), "top_logits": np.round(last[top], 5).tolist(),
                      "greedy_text": greedy})
        print(c["id"], repr(greedy))
    doc = {"reference": "PyTorch (transformers + the peft adapter) top logits; llama.cpp's greedy text with "
                        "models/wisp-agent/adapter.gguf (tools/make_lora_fixtures.py --smollm2)", "cases": cases}
    (OUT.parent / "smollm2" / "wisp-agent.json").write_text(json.dumps(doc) + "\n")


def main():
    if "--smollm2" in __import__("sys").argv:
        return smollm2()
    write_adapter(BASE, ADAPTER, np.random.default_rng(7))
    write_bad_adapters()
    base = str(OUT / "llama.gguf")
    f32_base(base)
    write_adapter(base, OUT / "llama.lora.gguf", np.random.default_rng(8))
    reference(base, str(OUT / "llama.lora.gguf"), "llama-lora", "llama.lora.gguf over llama.gguf (llama.safetensors)")


if __name__ == "__main__":
    main()
