"""Writes a trained adapter (peft format, out/adapter) as llama.cpp's GGUF LoRA adapter (f16).

    python3 tools/agent/export_gguf.py [--adapter tools/agent/out/adapter] [--out models/wisp-agent/adapter.gguf]

The format is the one llama.cpp's convert_lora_to_gguf.py writes and llama.cpp, wllama and Wisp load:
general.type = "adapter", adapter.type = "lora", adapter.lora.alpha, and for each adapted weight
`<GGUF weight name>.lora_a` (rank x in) and `.lora_b` (out x rank). transformers un-permutes attn_q and
attn_k when it loads a llama GGUF (llama.cpp stores their rows in the order its rope wants), so lora_b of
those two is permuted back here, rows only, the way llama.cpp's converter permutes the weights.
"""
import argparse
import json
import pathlib
import re

import gguf
import numpy as np
from safetensors.numpy import load_file

from common import BASE_DIR, BASE_FILE, MODEL_DIR, OUT, TARGETS


def permute(w, n_head):
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--adapter", default=str(OUT / "adapter"))
    ap.add_argument("--out", default=str(MODEL_DIR / "adapter.gguf"))
    a = ap.parse_args()
    src = pathlib.Path(a.adapter)
    cfg = json.loads((src / "adapter_config.json").read_text())
    tensors = load_file(src / "adapter_model.safetensors")

    base = gguf.GGUFReader(BASE_DIR / BASE_FILE)
    field = lambda k: base.fields[k].parts[base.fields[k].data[0]][0]
    n_head, n_head_kv = int(field("llama.attention.head_count")), int(field("llama.attention.head_count_kv"))

    w = gguf.GGUFWriter(a.out, "llama")
    w.add_string("general.type", "adapter")
    w.add_string("adapter.type", "lora")
    w.add_float32("adapter.lora.alpha", float(cfg["lora_alpha"]))
    w.add_string("general.name", "wisp-agent")
    pat = re.compile(r"base_model\.model\.model\.layers\.(\d+)\.(?:self_attn|mlp)\.(\w+)\.lora_([AB])\.weight")
    count = 0
    for name in sorted(tensors):
        m = pat.fullmatch(name)
        if not m:
            raise SystemExit(f"unexpected tensor {name}")
        layer, proj, half = int(m[1]), m[2], m[3]
        t = tensors[name].astype(np.float32)
        if half == "B" and proj in ("q_proj", "k_proj"):
            t = permute(t, n_head if proj == "q_proj" else n_head_kv)
        w.add_tensor(f"blk.{layer}.{TARGETS[proj]}.weight.lora_{half.lower()}", t.astype(np.float16))
        count += 1
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{count} tensors, alpha {cfg['lora_alpha']}, rank {cfg['r']} -> {a.out}")


if __name__ == "__main__":
    main()
