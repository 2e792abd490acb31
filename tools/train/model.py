"""A small Llama-architecture decoder written for Wisp (RMSNorm, rotary embeddings with the Hugging Face
rotate_half convention, grouped-query attention, SwiGLU MLP, tied embeddings).

Parameter names match Hugging Face's LlamaForCausalLM, so `state_dict()` can be saved as-is
(minus `lm_head.weight` when the embeddings are tied).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * xf.to(x.dtype)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rope_cos_sin(positions, head_dim, theta, dtype=torch.float32):
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    f = positions.float()[:, None] * inv[None, :]
    emb = torch.cat((f, f), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["hidden_size"]
        self.h = cfg["num_attention_heads"]
        self.kv = cfg["num_key_value_heads"]
        self.dh = d // self.h
        self.q_proj = nn.Linear(d, self.h * self.dh, bias=False)
        self.k_proj = nn.Linear(d, self.kv * self.dh, bias=False)
        self.v_proj = nn.Linear(d, self.kv * self.dh, bias=False)
        self.o_proj = nn.Linear(self.h * self.dh, d, bias=False)

    def forward(self, x, cos, sin, cache=None):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.h, self.dh).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv, self.dh).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv, self.dh).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if cache is not None:
            if "k" in cache:
                k = torch.cat([cache["k"], k], dim=2)
                v = torch.cat([cache["v"], v], dim=2)
            cache["k"], cache["v"] = k, v
        rep = self.h // self.kv
        if rep > 1:
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        if cache is not None and k.shape[2] != t:
            # incremental decoding: queries are the last t positions of the cached sequence
            s = k.shape[2]
            mask = torch.ones(t, s, dtype=torch.bool).tril(diagonal=s - t)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(y.transpose(1, 2).reshape(b, t, self.h * self.dh))


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, f = cfg["hidden_size"], cfg["intermediate_size"]
        self.gate_proj = nn.Linear(d, f, bias=False)
        self.up_proj = nn.Linear(d, f, bias=False)
        self.down_proj = nn.Linear(f, d, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])
        self.mlp = MLP(cfg)

    def forward(self, x, cos, sin, cache=None):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, cache)
        return x + self.mlp(self.post_attention_layernorm(x))


class Inner(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.layers = nn.ModuleList([Layer(cfg) for _ in range(cfg["num_hidden_layers"])])
        self.norm = RMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])


class LlamaForCausalLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.model = Inner(cfg)
        assert cfg["tie_word_embeddings"]
        self.head_dim = cfg["hidden_size"] // cfg["num_attention_heads"]
        self.apply(self._init)
        # scaled init of the residual output projections
        for layer in self.model.layers:
            std = 0.02 / math.sqrt(2 * cfg["num_hidden_layers"])
            nn.init.normal_(layer.self_attn.o_proj.weight, std=std)
            nn.init.normal_(layer.mlp.down_proj.weight, std=std)

    @staticmethod
    def _init(m):
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, std=0.02)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, std=0.02)

    def forward(self, ids, caches=None, start=0):
        """ids [b, t] -> logits [b, t, vocab]. With `caches` (a list of dicts, one per layer), keys and values
        are appended and positions start at `start`."""
        t = ids.shape[1]
        x = self.model.embed_tokens(ids)
        cos, sin = rope_cos_sin(torch.arange(start, start + t), self.head_dim, self.cfg["rope_theta"], x.dtype)
        for i, layer in enumerate(self.model.layers):
            x = layer(x, cos, sin, None if caches is None else caches[i])
        x = self.model.norm(x)
        return x @ self.model.embed_tokens.weight.t()


def hf_state_dict(model):
    """Tensors with Hugging Face names (no lm_head: embeddings are tied)."""
    return {k: v.detach().contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"}


def load_safetensors(path_dir, dtype=torch.float32):
    """Load config.json + model.safetensors (F16) and upcast to f32."""
    import json
    import pathlib

    from safetensors.torch import load_file

    d = pathlib.Path(path_dir)
    cfg = json.loads((d / "config.json").read_text())
    m = LlamaForCausalLM(cfg)
    sd = {k: v.to(dtype) for k, v in load_file(str(d / "model.safetensors")).items()}
    m.load_state_dict(sd, strict=True)
    m.eval()
    return m, cfg


@torch.no_grad()
def greedy(model, ids, max_new, stop_ids):
    """Greedy decoding with a KV cache. Returns (new token ids, logits of the last prompt position)."""
    caches = [dict() for _ in model.model.layers]
    logits = model(torch.tensor([ids]), caches, 0)[0, -1]
    first_logits = logits.clone()
    out = []
    pos = len(ids)
    for _ in range(max_new):
        nxt = int(torch.argmax(logits))
        out.append(nxt)
        if nxt in stop_ids:
            break
        logits = model(torch.tensor([[nxt]]), caches, pos)[0, -1]
        pos += 1
    return out, first_logits
