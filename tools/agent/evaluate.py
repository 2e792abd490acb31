"""Greedy outputs of the base model plus the adapter (PyTorch, no grammar) on the held-out cases.

    python3 tools/agent/evaluate.py [--adapter tools/agent/out/adapter | --base] [--limit N]
    python3 tools/agent/score.py tools/agent/out/outputs-torch.jsonl

The package's own figures (its engine, the agent's grammar) come from tests/node/agent-eval.mjs over the
same cases; score.py reads both.
"""
import argparse
import json
import time

import torch
from peft import PeftModel

from common import OUT, load_base, render


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--adapter", default=str(OUT / "adapter"))
    ap.add_argument("--base", action="store_true", help="the base model alone")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    tok, model = load_base()
    if not a.base:
        model = PeftModel.from_pretrained(model, a.adapter).merge_and_unload()
    model.eval()
    end = tok.convert_tokens_to_ids("<|im_end|>")
    cases = [json.loads(x) for x in open(OUT / "eval.jsonl")]
    if a.limit:
        cases = cases[::max(1, len(cases) // a.limit)]
    path = a.out or str(OUT / ("outputs-base.jsonl" if a.base else "outputs-torch.jsonl"))
    t0 = time.time()
    with open(path, "w") as f, torch.no_grad():
        for i, c in enumerate(cases):
            prompt = render(c["messages"], c["tools"], add_generation_prompt=True)
            ids = tok(prompt, add_special_tokens=False, return_tensors="pt")["input_ids"]
            gen = model.generate(ids, max_new_tokens=160, do_sample=False, eos_token_id=end, pad_token_id=end)
            text = tok.decode(gen[0, ids.shape[1]:], skip_special_tokens=False).removesuffix("<|im_end|>")
            f.write(json.dumps({"id": c["id"], "output": text}, ensure_ascii=False) + "\n")
            f.flush()
            if i % 20 == 0:
                print(f"{i}/{len(cases)} {time.time() - t0:.0f}s {c['id']}: {text[:100]!r}", flush=True)
    print(f"-> {path}")


if __name__ == "__main__":
    main()
