"""The held-out split, written once before any training data exists.

    python3 tools/agent/split.py          # writes tools/agent/split.json (refuses to overwrite)
    python3 tools/agent/split.py --check  # the bank and split.json still agree

A fifth of the tool bank's families (by a hash of the family's name, so the choice depends on nothing we
could tune) are never trained on: every evaluation request for "unseen tools" targets one of them, among
tools of the held-out families only. The held-out wordings (wrappers, contexts, joins, small talk, system
prompts) are the HELD_OUT_* lists of wording.py. The demo family is trained on at a small share and scored
on its own, with held-out wordings.
"""
import argparse
import hashlib
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bank  # noqa: E402

SPLIT = HERE / "split.json"


def held_out(name):
    return hashlib.sha256(name.encode()).digest()[0] % 5 == 0


def compute():
    families = sorted(f.name for f in bank.load_bank())
    return {"held_out_families": [f for f in families if held_out(f)],
            "train_families": [f for f in families if not held_out(f)],
            "rule": "sha256(family name)[0] % 5 == 0"}


def load():
    """The split as committed; fails when the bank has families the split does not know."""
    split = json.loads(SPLIT.read_text())
    known = set(split["held_out_families"]) | set(split["train_families"])
    new = sorted(f.name for f in bank.load_bank() if f.name not in known)
    if new:
        raise SystemExit(f"families not in split.json (the split is fixed; add them to neither side): {new}")
    return split


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    if a.check:
        s = load()
        print(f"{len(s['held_out_families'])} held-out families, {len(s['train_families'])} trained")
        return
    if SPLIT.exists():
        raise SystemExit(f"{SPLIT} exists: the split is written once")
    s = compute()
    SPLIT.write_text(json.dumps(s, indent=1) + "\n")
    print(f"held out: {', '.join(s['held_out_families'])}")


if __name__ == "__main__":
    main()
