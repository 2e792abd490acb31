"""Held-out evaluation of the Wisp default model: greedy decoding in PyTorch with the saved F16 weights upcast
to f32 (or a training checkpoint with --ckpt).

    OMP_NUM_THREADS=1 python3 tools/train/evaluate.py            # all cases in out/eval.jsonl
    OMP_NUM_THREADS=1 python3 tools/train/evaluate.py --ckpt tools/train/out/ckpt.pt --limit 120
    python3 tools/train/evaluate.py --outputs tools/train/out/constrained.jsonl   # score another engine's
        # outputs (one {"output"} line per case, e.g. tools/eval_constrained.rs: our Rust engine with the grammar)

Metrics per case kind:
  call     valid: the reply holds exactly one well-formed <tool_call> block with JSON {"name", "arguments"}
           tool: right function name; exact: right name and arguments equal to the expected ones
           (numbers compared by value); for multi-step cases, the second call after the first result
  no_call  the reply holds no <tool_call> (small talk, or the requested tool is not registered in the prompt)
  answer   after a gold call and its result: no call, and every expected value from the result is in the reply
  error    after a tool error: no call, the reply apologizes/reports the failure, and every number in the
           reply also appears in the prompt (nothing invented)
"""
import argparse
import json
import re
import time
from collections import defaultdict

import torch
from tokenizers import Tokenizer

from common import MODEL_DIR, OUT
from model import LlamaForCausalLM, greedy, load_safetensors

CALL_RE = re.compile(r"<tool_call>\n(.*?)\n</tool_call>", re.S)


def parse_calls(text):
    calls, ok = [], True
    if text.count("<tool_call>") != text.count("</tool_call>"):
        ok = False
    for body in CALL_RE.findall(text):
        try:
            obj = json.loads(body)
            if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not isinstance(obj.get("arguments"), dict):
                ok = False
            calls.append(obj)
        except json.JSONDecodeError:
            ok = False
            calls.append(None)
    return calls, ok


def same(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(float(a) - float(b)) < 1e-9
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


APOLOGY = ["sorry", "error", "couldn't", "could not", "unable", "failed", "wasn't able", "unfortunately", "went wrong"]


def score(case, text):
    calls, ok = parse_calls(text)
    has_call = "<tool_call>" in text
    k = case["kind"]
    if k == "call":
        valid = ok and len(calls) == 1 and calls[0] is not None
        exp = case["expect"]
        tool = valid and calls[0]["name"] == exp["name"]
        exact = tool and same(calls[0]["arguments"], exp["arguments"])
        return {"valid": valid, "tool": tool, "exact": exact}
    if k == "no_call":
        return {"no_call": not has_call}
    if k == "answer":
        return {"no_call": not has_call, "uses_result": (not has_call) and all(s in text for s in case["expect"]["contains"])}
    if k == "error":
        nums = re.findall(r"\d+(?:\.\d+)?", text)
        honest = all(n in case["prompt"] for n in nums)
        apol = any(w in text.lower() for w in APOLOGY)
        return {"no_call": not has_call, "reports_error": (not has_call) and apol and honest}
    raise ValueError(k)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", default=None)
    ap.add_argument("--limit", type=int, default=0, help="evaluate every n-th case to get about this many")
    ap.add_argument("--outputs", default=None, help="score these outputs instead of generating with PyTorch")
    ap.add_argument("--out", default=str(OUT / "eval_results.jsonl"))
    ap.add_argument("--report", default=str(OUT / "eval_report.md"))
    args = ap.parse_args()
    if args.outputs and args.limit:
        ap.error("--outputs scores every case: no --limit")
    torch.set_num_threads(1)
    tok = Tokenizer.from_file(str(MODEL_DIR / "tokenizer.json"))
    if args.outputs:
        model, src = None, args.outputs
        outputs = [json.loads(l)["output"] for l in open(args.outputs)]
    elif args.ckpt:
        cfg = json.loads((MODEL_DIR / "config.json").read_text())
        model = LlamaForCausalLM(cfg)
        model.load_state_dict(torch.load(args.ckpt))
        model.eval()
        src = args.ckpt
    else:
        model, cfg = load_safetensors(MODEL_DIR)
        src = str(MODEL_DIR / "model.safetensors") + " (F16 upcast to f32)"
    stops = {tok.token_to_id("<|im_end|>"), tok.token_to_id("<|endoftext|>")}
    cases = [json.loads(l) for l in open(OUT / "eval.jsonl")]
    if args.outputs:
        assert len(outputs) == len(cases), f"{len(outputs)} outputs for {len(cases)} cases"
    if args.limit and args.limit < len(cases):
        step = len(cases) / args.limit
        cases = [cases[int(i * step)] for i in range(args.limit)]
    t0 = time.time()
    agg = defaultdict(lambda: defaultdict(list))
    by_tool = defaultdict(lambda: defaultdict(list))
    with open(args.out, "w") as f:
        for n, c in enumerate(cases):
            if model is None:
                text = outputs[n].replace("<|im_end|>", "").replace("<|endoftext|>", "")
            else:
                ids = tok.encode(c["prompt"], add_special_tokens=False).ids
                out, _ = greedy(model, ids, 160, stops)
                text = tok.decode([i for i in out if i not in stops], skip_special_tokens=False)
            s = score(c, text)
            grp = c["group"].replace("-answer", "")
            for k, v in s.items():
                agg[(grp, c["kind"])][k].append(v)
                if grp == "demo" and c["kind"] == "call":
                    by_tool[c["expect"]["name"]][k].append(v)
            f.write(json.dumps({"group": c["group"], "kind": c["kind"], "user": c["messages"][1]["content"],
                                "expect": c["expect"], "output": text, "score": s}, ensure_ascii=False) + "\n")
    el = time.time() - t0
    lines = [f"Evaluation of {src}: {len(cases)} held-out cases, greedy, {el:.0f} s", "",
             "| group | kind | n | metric | rate |", "| --- | --- | --- | --- | --- |"]
    for (g, k), d in sorted(agg.items()):
        for m, v in d.items():
            lines.append(f"| {g} | {k} | {len(v)} | {m} | {100 * sum(v) / len(v):.1f}% |")
    lines += ["", "Demo tool calls by tool:", "", "| tool | n | valid | tool | exact |", "| --- | --- | --- | --- | --- |"]
    for name, d in by_tool.items():
        lines.append(f"| {name} | {len(d['valid'])} | " + " | ".join(
            f"{100 * sum(d[m]) / len(d[m]):.0f}%" for m in ("valid", "tool", "exact")) + " |")
    rep = "\n".join(lines)
    print(rep)
    open(args.report, "w").write(rep + "\n")


if __name__ == "__main__":
    main()
