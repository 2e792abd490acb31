"""Standard ONNX exports with a KV cache, for the in-browser peer of benches-web/ (onnxruntime-web).

    python3 tools/export_onnx_kv.py [--out benches-web/.models] [--only llama,smollm2,wisp-mini]

Same weights as Wisp runs: (a) SmolLM2-135M-Instruct from the GGUF, dequantized to f32 by gguf-py and
un-permuted to Hugging Face's rotary layout (tools/make_smollm2_reference.py); (b) the tiny fixture
tests/fixtures/decoders/llama.*; (c) models/wisp-mini/ if it exists (skipped otherwise). numpy + onnx only
to build; onnxruntime (CPU) only to check the tiny export against tools/make_decoder_fixtures.py's
whole-sequence reference graph.

The graph is tools/make_decoder_fixtures.py's reference graph with a cache. Inputs, for n new tokens
after `past` cached ones (both dynamic):
    input_ids [n] int64, position_ids [n] int64, attention_mask [n, past+n] f32 (additive: 0 or -inf),
    past_key_L, past_value_L [kv_heads, past, head_dim] f32 for every layer L
Outputs: logits [1, vocab] (the last position only: generation needs no more, and the vocabulary
projection of every prompt position would be most of a long prefill's work), present_key_L,
present_value_L [kv_heads, past+n, head_dim]. Rotary tables are initializers gathered by position_ids.
"""
import argparse
import json
import pathlib
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from make_decoder_fixtures import Graph  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
GGUF = ROOT / "models" / "smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
MAX_POSITIONS = 2048  # rows of the rotary tables; the benches stay far below


def kv_graph(cfg, w):
    d, h, kv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    dh = cfg.get("head_dim", d // h)
    eps, layers = cfg["rms_norm_eps"], cfg["num_hidden_layers"]
    g = Graph()
    embed = g.const(w["model.embed_tokens.weight"])
    x = g.op("Gather", embed, "input_ids", axis=0)  # [n, d]
    inv_freq = 1.0 / (cfg["rope_theta"] ** (np.arange(0, dh, 2, dtype=np.float64) / dh))
    freqs = np.outer(np.arange(MAX_POSITIONS), inv_freq)
    emb = np.concatenate([freqs, freqs], axis=-1)
    cos = g.op("Gather", g.const(np.cos(emb)), "position_ids", axis=0)  # [n, dh], broadcasts over heads
    sin = g.op("Gather", g.const(np.sin(emb)), "position_ids", axis=0)
    half = dh // 2

    def rope(t):  # t: [heads, n, dh]
        lo = g.op("Slice", t, g.const([0], np.int64), g.const([half], np.int64), g.const([2], np.int64))
        hi = g.op("Slice", t, g.const([half], np.int64), g.const([dh], np.int64), g.const([2], np.int64))
        rot = g.op("Concat", g.op("Neg", hi), lo, axis=2)
        return g.op("Add", g.op("Mul", t, cos), g.op("Mul", rot, sin))

    def heads(t, count):  # [n, count*dh] -> [count, n, dh]
        return g.op("Transpose", g.op("Reshape", t, g.const([0, count, dh], np.int64)), perm=[1, 0, 2])

    group = g.const(np.arange(h) // (h // kv), np.int64)
    scale = g.const(1.0 / np.sqrt(dh))
    f32 = lambda name, dims: helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["n"]),
              helper.make_tensor_value_info("position_ids", TensorProto.INT64, ["n"]),
              f32("attention_mask", ["n", "total"])]
    outputs = [f32("logits", [1, cfg["vocab_size"]])]
    for i in range(layers):
        p = f"model.layers.{i}."
        a = g.rms_norm(x, g.const(w[p + "input_layernorm.weight"]), eps)
        q = heads(g.linear(a, w[p + "self_attn.q_proj.weight"], w.get(p + "self_attn.q_proj.bias")), h)
        k = heads(g.linear(a, w[p + "self_attn.k_proj.weight"], w.get(p + "self_attn.k_proj.bias")), kv)
        v = heads(g.linear(a, w[p + "self_attn.v_proj.weight"], w.get(p + "self_attn.v_proj.bias")), kv)
        if p + "self_attn.q_norm.weight" in w:
            q = g.rms_norm(q, g.const(w[p + "self_attn.q_norm.weight"]), eps)
            k = g.rms_norm(k, g.const(w[p + "self_attn.k_norm.weight"]), eps)
        q, k = rope(q), rope(k)
        # The cache holds keys after rotary, per kv head; the new rows go after the past ones.
        g.nodes.append(helper.make_node("Concat", [f"past_key_{i}", k], [f"present_key_{i}"], axis=1))
        g.nodes.append(helper.make_node("Concat", [f"past_value_{i}", v], [f"present_value_{i}"], axis=1))
        inputs += [f32(f"past_key_{i}", [kv, "past", dh]), f32(f"past_value_{i}", [kv, "past", dh])]
        outputs += [f32(f"present_key_{i}", [kv, "total", dh]), f32(f"present_value_{i}", [kv, "total", dh])]
        kk = g.op("Gather", f"present_key_{i}", group, axis=0)  # grouped-query: [h, total, dh]
        vv = g.op("Gather", f"present_value_{i}", group, axis=0)
        scores = g.op("Mul", g.op("MatMul", q, g.op("Transpose", kk, perm=[0, 2, 1])), scale)
        probs = g.op("Softmax", g.op("Add", scores, "attention_mask"), axis=-1)
        att = g.op("Reshape", g.op("Transpose", g.op("MatMul", probs, vv), perm=[1, 0, 2]),
                   g.const([0, h * dh], np.int64))
        x = g.op("Add", x, g.linear(att, w[p + "self_attn.o_proj.weight"]))
        m = g.rms_norm(x, g.const(w[p + "post_attention_layernorm.weight"]), eps)
        gate = g.linear(m, w[p + "mlp.gate_proj.weight"])
        act = g.op("Mul", g.op("Mul", gate, g.op("Sigmoid", gate)), g.linear(m, w[p + "mlp.up_proj.weight"]))
        x = g.op("Add", x, g.linear(act, w[p + "mlp.down_proj.weight"]))
    last = g.op("Slice", x, g.const([-1], np.int64), g.const([np.iinfo(np.int64).max], np.int64), g.const([0], np.int64))
    last = g.rms_norm(last, g.const(w["model.norm.weight"]), eps)
    # Tied embeddings: Gemm with transB reads the embedding initializer itself, not a transposed copy.
    head = embed if "lm_head.weight" not in w else g.const(w["lm_head.weight"])
    g.nodes.append(helper.make_node("Gemm", [last, head], ["logits"], transB=1))
    graph = helper.make_graph(g.nodes, "decoder_kv", inputs, outputs, g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # onnxruntime-web 1.23 reads up to 10; 8 is what opset 17 needs
    return model


def smollm2_weights():
    from gguf import GGUFReader
    from gguf.quants import dequantize
    from make_smollm2_reference import field, unpermute

    reader = GGUFReader(str(GGUF))
    cfg = {
        "hidden_size": int(field(reader, "llama.embedding_length")),
        "intermediate_size": int(field(reader, "llama.feed_forward_length")),
        "num_attention_heads": int(field(reader, "llama.attention.head_count")),
        "num_key_value_heads": int(field(reader, "llama.attention.head_count_kv")),
        "num_hidden_layers": int(field(reader, "llama.block_count")),
        "rms_norm_eps": float(field(reader, "llama.attention.layer_norm_rms_epsilon")),
        "rope_theta": float(field(reader, "llama.rope.freq_base")),
        "max_position_embeddings": int(field(reader, "llama.context_length")),
    }
    names = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}
    parts = {"attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm",
             "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
             "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
             "ffn_down": "mlp.down_proj"}
    w = {}
    for t in reader.tensors:
        values = dequantize(t.data, t.tensor_type).astype(np.float32).reshape([int(d) for d in reversed(t.shape)])
        stem, suffix = t.name.rsplit(".", 1)
        if stem.startswith("blk."):
            _, layer, part = stem.split(".", 2)
            if part == "attn_q":
                values = unpermute(values, cfg["num_attention_heads"])
            if part == "attn_k":
                values = unpermute(values, cfg["num_key_value_heads"])
            w[f"model.layers.{layer}.{parts[part]}.{suffix}"] = values
        else:
            w[f"{names[stem]}.{suffix}"] = values
    cfg["vocab_size"] = w["model.embed_tokens.weight"].shape[0]
    return cfg, w


def safetensors_weights(config_path, weights_path):
    from safetensors.numpy import load_file

    cfg = json.loads(pathlib.Path(config_path).read_text())
    return cfg, {k: v.astype(np.float32) for k, v in load_file(str(weights_path)).items()}


def check_tiny(cfg, w, model):
    """The cached graph, prefill then one token at a time, against the whole-sequence reference."""
    import onnxruntime as ort
    from make_decoder_fixtures import Reference

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    kv, dh = cfg["num_key_value_heads"], cfg.get("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"])
    ids = [1, 17, 42, 99, 3, 250, 7, 7, 64, 128, 5, 200]
    cache = {f"past_{t}_{i}": np.zeros((kv, 0, dh), np.float32)
             for i in range(cfg["num_hidden_layers"]) for t in ("key", "value")}
    rows, past = [], 0
    for chunk in (ids[:8], ids[8:9], ids[9:10], ids[10:]):
        n = len(chunk)
        mask = np.zeros((n, past + n), np.float32)
        mask[:, past:] = np.triu(np.full((n, n), -np.inf, np.float32), 1)
        out = sess.run(None, {"input_ids": np.array(chunk, np.int64),
                              "position_ids": np.arange(past, past + n, dtype=np.int64),
                              "attention_mask": mask, **cache})
        rows.append(out[0][0])
        cache = {k.replace("present", "past"): v for k, v in zip([o.name for o in sess.get_outputs()][1:], out[1:])}
        past += n
    ref = Reference(cfg, w).logits(ids)
    err = max(np.abs(rows[j] - ref[p]).max() for j, p in enumerate([7, 8, 9, 11]))
    assert err < 1e-4, f"cached export differs from the reference by {err}"
    return float(err)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "benches-web" / ".models"))
    ap.add_argument("--only", default="llama,smollm2,wisp-mini")
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in args.only.split(","):
        if name == "llama":
            fx = ROOT / "tests" / "fixtures" / "decoders"
            cfg, w = safetensors_weights(fx / "llama.config.json", fx / "llama.safetensors")
        elif name == "smollm2":
            if not GGUF.exists():
                print(f"skip smollm2: no {GGUF} (tools/fetch-smollm2.sh)")
                continue
            cfg, w = smollm2_weights()
        elif name == "wisp-mini":
            d = ROOT / "models" / "wisp-mini"
            if not (d / "config.json").exists() or not list(d.glob("*.safetensors")):
                print("skip wisp-mini: models/wisp-mini/ has no config.json + safetensors")
                continue
            cfg, w = safetensors_weights(d / "config.json", next(d.glob("*.safetensors")))
        else:
            raise SystemExit(f"unknown model {name}")
        model = kv_graph(cfg, w)
        onnx.checker.check_model(model)
        note = f"; checked against the reference, max |diff| {check_tiny(cfg, w, model):.1e}" if name == "llama" else ""
        path = out / f"{name}.kv.onnx"
        onnx.save(model, str(path))
        dh = cfg.get("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"])
        meta = {"layers": cfg["num_hidden_layers"], "kvHeads": cfg["num_key_value_heads"], "headDim": dh,
                "vocab": cfg["vocab_size"], "weightBytes": int(sum(v.nbytes for v in w.values()))}
        (out / f"{name}.kv.json").write_text(json.dumps(meta) + "\n")
        print(f"{path}: {path.stat().st_size} bytes{note}")


if __name__ == "__main__":
    main()
