"""Tiny random-weight decoders of each supported family, with reference logits from onnxruntime.

Run once (not in CI); outputs are committed under tests/fixtures/decoders/:
    pip install numpy onnx onnxruntime safetensors && python3 tools/make_decoder_fixtures.py

For each family: NAME.safetensors and NAME.config.json (Hugging Face names and config keys) and NAME.json
with token sequences and the logits at every position. The reference is a standard ONNX graph of the whole
sequence (full causal attention, Softmax, Slice-based rotary embedding), built here independently of the
Rust graph builder and run by onnxruntime.
"""
import json
import pathlib

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from safetensors.numpy import save_file

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "decoders"

FAMILIES = {
    # Llama / SmolLM2: GQA, tied embeddings.
    "llama": dict(model_type="llama", hidden_size=64, intermediate_size=128, num_attention_heads=4,
                  num_key_value_heads=2, num_hidden_layers=2, vocab_size=256, rms_norm_eps=1e-5,
                  rope_theta=10000.0, tie_word_embeddings=True, max_position_embeddings=256),
    # Qwen2 / 2.5: q, k, v biases, untied head.
    "qwen2": dict(model_type="qwen2", hidden_size=64, intermediate_size=96, num_attention_heads=4,
                  num_key_value_heads=2, num_hidden_layers=2, vocab_size=256, rms_norm_eps=1e-6,
                  rope_theta=1000000.0, tie_word_embeddings=False, max_position_embeddings=256),
    # Qwen3: per-head q and k RMSNorm, explicit head_dim != hidden / heads.
    "qwen3": dict(model_type="qwen3", hidden_size=64, intermediate_size=128, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=32, num_hidden_layers=2, vocab_size=256,
                  rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True,
                  max_position_embeddings=256),
}

SEQUENCES = [
    [1, 17, 42, 99, 3, 250, 7, 7, 64, 128, 5, 200, 31, 8, 77, 12, 90, 91, 2, 45],
    [9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 255, 254],
]


def weights(cfg, rng):
    d, f, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    h, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    dh = cfg.get("head_dim", d // h)
    r = lambda *s: (rng.standard_normal(s) * 0.08).astype(np.float32)
    norm = lambda n: (1.0 + rng.standard_normal(n) * 0.1).astype(np.float32)
    w = {"model.embed_tokens.weight": r(v, d), "model.norm.weight": norm(d)}
    if not cfg["tie_word_embeddings"]:
        w["lm_head.weight"] = r(v, d)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = norm(d)
        w[p + "post_attention_layernorm.weight"] = norm(d)
        w[p + "self_attn.q_proj.weight"] = r(h * dh, d)
        w[p + "self_attn.k_proj.weight"] = r(kv * dh, d)
        w[p + "self_attn.v_proj.weight"] = r(kv * dh, d)
        w[p + "self_attn.o_proj.weight"] = r(d, h * dh)
        w[p + "mlp.gate_proj.weight"] = r(f, d)
        w[p + "mlp.up_proj.weight"] = r(f, d)
        w[p + "mlp.down_proj.weight"] = r(d, f)
        if cfg["model_type"] == "qwen2":
            w[p + "self_attn.q_proj.bias"] = r(h * dh)
            w[p + "self_attn.k_proj.bias"] = r(kv * dh)
            w[p + "self_attn.v_proj.bias"] = r(kv * dh)
        if cfg["model_type"] == "qwen3":
            w[p + "self_attn.q_norm.weight"] = norm(dh)
            w[p + "self_attn.k_norm.weight"] = norm(dh)
    return w


class Graph:
    """A few helpers over onnx.helper for a standard-op reference graph."""

    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def const(self, value, dtype=np.float32):
        self.n += 1
        name = f"c{self.n}"
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(self, op_type, *inputs, **attrs):
        self.n += 1
        out = f"t{self.n}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    def rms_norm(self, x, weight, eps):
        ms = self.op("ReduceMean", self.op("Mul", x, x), axes=[-1], keepdims=1)
        return self.op("Mul", self.op("Div", x, self.op("Sqrt", self.op("Add", ms, self.const(eps)))), weight)

    def linear(self, x, weight, bias=None):
        y = self.op("MatMul", x, self.const(weight.T))
        return self.op("Add", y, self.const(bias)) if bias is not None else y


def reference_graph(cfg, w):
    """A standard-op ONNX graph of the whole model over a sequence of any length n.

    Inputs: ids [n] (int64), cos and sin [1, n, dh] (rotary tables), causal [n, n] (0 or -inf)."""
    d, h, kv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    dh = cfg.get("head_dim", d // h)
    eps = cfg["rms_norm_eps"]
    g = Graph()
    x = g.op("Gather", g.const(w["model.embed_tokens.weight"]), "ids", axis=0)  # [n, d]
    half = dh // 2

    def rope(t):  # t: [heads, n, dh]
        lo = g.op("Slice", t, g.const([0], np.int64), g.const([half], np.int64), g.const([2], np.int64))
        hi = g.op("Slice", t, g.const([half], np.int64), g.const([dh], np.int64), g.const([2], np.int64))
        rot = g.op("Concat", g.op("Neg", hi), lo, axis=2)
        return g.op("Add", g.op("Mul", t, "cos"), g.op("Mul", rot, "sin"))

    def heads(t, count):  # [n, count*dh] -> [count, n, dh]
        return g.op("Transpose", g.op("Reshape", t, g.const([0, count, dh], np.int64)), perm=[1, 0, 2])

    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        a = g.rms_norm(x, g.const(w[p + "input_layernorm.weight"]), eps)
        q = heads(g.linear(a, w[p + "self_attn.q_proj.weight"], w.get(p + "self_attn.q_proj.bias")), h)
        k = heads(g.linear(a, w[p + "self_attn.k_proj.weight"], w.get(p + "self_attn.k_proj.bias")), kv)
        v = heads(g.linear(a, w[p + "self_attn.v_proj.weight"], w.get(p + "self_attn.v_proj.bias")), kv)
        if p + "self_attn.q_norm.weight" in w:
            q = g.rms_norm(q, g.const(w[p + "self_attn.q_norm.weight"]), eps)
            k = g.rms_norm(k, g.const(w[p + "self_attn.k_norm.weight"]), eps)
        q, k = rope(q), rope(k)
        # Grouped-query attention: query head j reads key/value head j // (h // kv).
        group = g.const(np.arange(h) // (h // kv), np.int64)
        k, v = g.op("Gather", k, group, axis=0), g.op("Gather", v, group, axis=0)
        scores = g.op("Mul", g.op("MatMul", q, g.op("Transpose", k, perm=[0, 2, 1])), g.const(1.0 / np.sqrt(dh)))
        probs = g.op("Softmax", g.op("Add", scores, "causal"), axis=-1)
        att = g.op("Reshape", g.op("Transpose", g.op("MatMul", probs, v), perm=[1, 0, 2]),
                   g.const([0, h * dh], np.int64))
        x = g.op("Add", x, g.linear(att, w[p + "self_attn.o_proj.weight"]))
        m = g.rms_norm(x, g.const(w[p + "post_attention_layernorm.weight"]), eps)
        gate = g.linear(m, w[p + "mlp.gate_proj.weight"])
        act = g.op("Mul", g.op("Mul", gate, g.op("Sigmoid", gate)), g.linear(m, w[p + "mlp.up_proj.weight"]))
        x = g.op("Add", x, g.linear(act, w[p + "mlp.down_proj.weight"]))
    x = g.rms_norm(x, g.const(w["model.norm.weight"]), eps)
    head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    g.nodes.append(helper.make_node("MatMul", [x, g.const(head.T)], ["logits"]))
    f32 = lambda name, dims: helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)
    graph = helper.make_graph(
        g.nodes, "reference",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["n"]), f32("cos", [1, "n", dh]),
         f32("sin", [1, "n", dh]), f32("causal", ["n", "n"])],
        [f32("logits", ["n", cfg["vocab_size"]])], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


class Reference:
    """onnxruntime over the reference graph; `logits(ids)` is [len(ids), vocab]."""

    def __init__(self, cfg, w):
        self.cfg = cfg
        model = reference_graph(cfg, w)
        opts = ort.SessionOptions()
        self.sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])

    def logits(self, ids):
        cfg, n = self.cfg, len(ids)
        dh = cfg.get("head_dim", cfg["hidden_size"] // cfg["num_attention_heads"])
        inv_freq = 1.0 / (cfg["rope_theta"] ** (np.arange(0, dh, 2, dtype=np.float64) / dh))
        freqs = np.outer(np.arange(n, dtype=np.float64), inv_freq)
        emb = np.concatenate([freqs, freqs], axis=-1)
        feeds = {
            "ids": np.asarray(ids, dtype=np.int64),
            "cos": np.cos(emb)[None].astype(np.float32),
            "sin": np.sin(emb)[None].astype(np.float32),
            "causal": np.triu(np.full((n, n), -np.inf, dtype=np.float32), 1),
        }
        return self.sess.run(["logits"], feeds)[0]


def byte_tokenizer():
    """A 256-token byte-level tokenizer (no merges) that fits the tiny models' vocabulary."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    order = sorted(alphabet, key=lambda ch: ord(ch))
    tok = Tokenizer(models.BPE(vocab={ch: i for i, ch in enumerate(order)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.save(str(OUT / "bytes.tokenizer.json"))


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    byte_tokenizer()
    for seed, (name, cfg) in enumerate(FAMILIES.items()):
        rng = np.random.default_rng(1000 + seed)
        w = weights(cfg, rng)
        save_file(w, str(OUT / f"{name}.safetensors"))
        (OUT / f"{name}.config.json").write_text(json.dumps(cfg, indent=1) + "\n")
        cases = []
        reference = Reference(cfg, w)
        for ids in SEQUENCES:
            logits = reference.logits(ids)
            seq = ids[:6]
            for _ in range(10):
                seq = seq + [int(reference.logits(seq)[-1].argmax())]
            cases.append({"tokens": ids, "logits": np.round(logits, 6).tolist(),
                          "argmax": logits.argmax(-1).tolist(), "greedy_from_6": seq[6:]})
        doc = {"reference": f"onnxruntime {ort.__version__} (CPUExecutionProvider), standard-op graph",
               "cases": cases}
        (OUT / f"{name}.json").write_text(json.dumps(doc) + "\n")
        print(name, "ok", [c["argmax"][:5] for c in cases])


if __name__ == "__main__":
    main()
