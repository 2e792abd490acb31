"""Scores model outputs on the held-out cases (out/eval.jsonl) and prints the report's table.

    python3 tools/agent/score.py tools/agent/out/outputs-torch.jsonl [more outputs files...]
    python3 tools/agent/score.py --cases tools/agent/out/eval-bank64.jsonl OUTPUTS...   # other cases

An outputs file holds {"id", "output"} lines: the assistant message as the model wrote it.
"""
import json
import re
import sys
from collections import defaultdict

from common import OUT

CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)


def parse(output):
    """(calls, valid): the calls written, and whether each one is JSON with a name and object arguments."""
    calls, valid = [], True
    for body in CALL.findall(output):
        try:
            c = json.loads(body)
            calls.append({"name": c["name"], "arguments": c.get("arguments", {})})
            valid &= isinstance(c["arguments"], dict)
        except (ValueError, KeyError, TypeError):
            valid = False
            calls.append(None)
    if "<tool_call>" in output and not calls:
        valid = False
    return calls, valid


def text_of(output):
    return CALL.sub("", output).strip()


def contains(text, value):
    t = text.lower()
    v = str(value).lower()
    if v in t:
        return True
    try:  # 12.0 stated as 12, 1500 as 1,500
        f = float(v)
        nums = [float(x.replace(",", "")) for x in re.findall(r"-?\d[\d,]*(?:\.\d+)?", text)]
        return any(abs(n - f) < 1e-9 for n in nums)
    except ValueError:
        return False


def score(cases, outputs):
    rows = defaultdict(lambda: defaultdict(int))
    convs = defaultdict(list)
    for c in cases:
        out = outputs.get(c["id"])
        if out is None:
            continue
        cat, exp = c["category"], c["expect"]
        calls, valid = parse(out)
        r = rows[cat]
        r["n"] += 1
        want = exp["calls"]
        if want:
            r["valid_json"] += valid and bool(calls)
            r["right_tool"] += [x and x["name"] for x in calls] == [w["name"] for w in want]
            ok = calls == want
            r["exact"] += ok
            if cat == "multiturn":
                convs[c["conversation"]].append(ok)
        else:
            r["no_call"] += not calls
            if "contains" in exp:
                r["states_result"] += not calls and all(contains(text_of(out), v) for v in exp["contains"])
    return rows, convs


def main():
    args = sys.argv[1:]
    # `--cases FILE` scores against other held-out cases than out/eval.jsonl (e.g. an older bank's).
    cases_file = OUT / "eval.jsonl"
    if args[:1] == ["--cases"]:
        cases_file, args = args[1], args[2:]
    cases = [json.loads(x) for x in open(cases_file)]
    for path in args:
        outputs = {o["id"]: o["output"] for o in map(json.loads, open(path))}
        rows, convs = score(cases, outputs)
        print(f"\n{path}")
        print("| set | cases | exact calls | right tool | valid JSON | no call | states the result |")
        print("|---|---|---|---|---|---|---|")
        for cat in ["call", "two", "demo", "multiturn", "no_call", "absent", "answer", "error"]:
            r = rows.get(cat)
            if not r:
                continue
            n = r["n"]
            pct = lambda k: f"{r[k]}/{n} ({100 * r[k] / n:.0f}%)"
            if cat in ("call", "two", "demo", "multiturn"):
                print(f"| {cat} | {n} | {pct('exact')} | {pct('right_tool')} | {pct('valid_json')} | | |")
            else:
                st = pct("states_result") if cat in ("answer", "error") or r["states_result"] else ""
                print(f"| {cat} | {n} | | | | {pct('no_call')} | {st} |")
        if convs:
            full = sum(all(v) for v in convs.values())
            print(f"multi-turn conversations with all {max(len(v) for v in convs.values())} turns right: "
                  f"{full}/{len(convs)}; per conversation: {[sum(v) for v in convs.values()]}")


if __name__ == "__main__":
    main()
