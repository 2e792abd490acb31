"""Reads a GGUF LoRA adapter (the committed models/wisp-agent/adapter.gguf) back into peft's format, so a
training run can go on from the adapter in the repository when out/adapter is gone (a fresh machine).

    python3 tools/agent/import_gguf.py [--gguf models/wisp-agent/adapter.gguf] [--out tools/agent/out/adapter-gguf]
    python3 tools/agent/train.py --resume tools/agent/out/adapter-gguf ...

The inverse of export_gguf.py: lora_b of attn_q and attn_k is un-permuted to transformers' row order. The
f16 values are what the runtime runs, so the run goes on from exactly the committed adapter (the f32
checkpoint it was exported from differs by f16 rounding only). export_gguf.py of the result gives back the
same tensors, which `--check` verifies.
"""
import argparse
import pathlib
import re

import gguf
import numpy as np
import torch
from peft import LoraConfig, get_peft_model

from common import BASE_DIR, BASE_FILE, LORA_RANK, MODEL_DIR, OUT, TARGETS, load_base


def unpermute(w, n_head):
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def read_adapter(path):
    r = gguf.GGUFReader(path)
    field = lambda k: r.fields[k].parts[r.fields[k].data[0]]
    if bytes(field("general.type")).decode() != "adapter" or bytes(field("adapter.type")).decode() != "lora":
        raise SystemExit(f"{path} is not a GGUF LoRA adapter")
    alpha = float(field("adapter.lora.alpha")[0])
    # GGUF lists dimensions innermost first; the reader's data already has numpy's (rows, cols) shape
    return alpha, {t.name: np.asarray(t.data, dtype=np.float32).reshape(t.data.shape) for t in r.tensors}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", default=str(MODEL_DIR / "adapter.gguf"))
    ap.add_argument("--out", default=str(OUT / "adapter-gguf"))
    ap.add_argument("--check", action="store_true", help="export the result again and compare with --gguf")
    a = ap.parse_args()
    alpha, tensors = read_adapter(a.gguf)

    base = gguf.GGUFReader(BASE_DIR / BASE_FILE)
    field = lambda k: base.fields[k].parts[base.fields[k].data[0]][0]
    n_head, n_head_kv = int(field("llama.attention.head_count")), int(field("llama.attention.head_count_kv"))
    names = {v: k for k, v in TARGETS.items()}
    pat = re.compile(r"blk\.(\d+)\.(\w+)\.weight\.lora_([ab])")
    state = {}
    for name, t in tensors.items():
        m = pat.fullmatch(name)
        if not m or m[2] not in names:
            raise SystemExit(f"unexpected tensor {name}")
        layer, proj, half = int(m[1]), names[m[2]], m[3].upper()
        if half == "B" and proj in ("q_proj", "k_proj"):
            t = unpermute(t, n_head if proj == "q_proj" else n_head_kv)
        group = "self_attn" if proj.endswith(("q_proj", "k_proj", "v_proj", "o_proj")) else "mlp"
        state[f"base_model.model.model.layers.{layer}.{group}.{proj}.lora_{half}.default.weight"] = torch.from_numpy(t)
    rank = next(iter(tensors.values())).shape
    if LORA_RANK not in rank:
        raise SystemExit(f"the adapter's rank is not {LORA_RANK}: {rank}")

    _, model = load_base()
    cfg = LoraConfig(r=LORA_RANK, lora_alpha=alpha, lora_dropout=0.05, target_modules=list(TARGETS),
                     task_type="CAUSAL_LM")
    model = get_peft_model(model, cfg)
    expected = {k for k in model.state_dict() if ".lora_" in k}
    if expected != set(state):
        raise SystemExit(f"tensors missing: {sorted(expected - set(state))[:3]}, extra: {sorted(set(state) - expected)[:3]}")
    model.load_state_dict(state, strict=False)
    model.save_pretrained(a.out)
    print(f"{len(state)} tensors, alpha {alpha}, rank {LORA_RANK} -> {a.out}")

    if a.check:
        import subprocess
        import sys
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            again = pathlib.Path(d) / "again.gguf"
            subprocess.run([sys.executable, str(pathlib.Path(__file__).with_name("export_gguf.py")), "--adapter", a.out,
                            "--out", str(again)], check=True)
            _, back = read_adapter(again)
        diff = [n for n in tensors if not np.array_equal(tensors[n], back[n])]
        if diff or set(back) != set(tensors):
            raise SystemExit(f"round trip differs: {diff[:3]}")
        print("round trip: the same tensors")


if __name__ == "__main__":
    main()
