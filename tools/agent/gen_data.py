"""Tool-use conversations for fine-tuning SmolLM2 (training) and the held-out evaluation cases.

    python3 tools/agent/gen_data.py --train 6000 --seed 1    # tools/agent/out/train.jsonl
    python3 tools/agent/gen_data.py --eval                   # tools/agent/out/eval.jsonl (fixed seed)

Training draws only trained families (split.json), the TRAIN_* wordings and the demo family; the evaluation
draws only held-out families and HELD_OUT_* wordings (the demo cases: demo tools, held-out wordings).
A training line is {"tools": [...], "messages": [...]}; an evaluation line adds "id", "category" and
"expect", its messages ending where the model has to write.
"""
import argparse
import json
import pathlib
import random
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bank  # noqa: E402
import split as split_mod  # noqa: E402
import wording as W  # noqa: E402

OUT = HERE / "out"

EXTRA_POOLS = {
    "condition": ["sunny", "rainy", "cloudy", "windy", "overcast", "snowy", "foggy", "clear"],
    "expression": ["12 * 7", "3 + 4 * 2", "(15 - 3) / 4", "2^10", "144 / 12", "18% of 250", "99 * 99",
                   "1.5 * 40", "sqrt(81)", "7 * 8 + 3", "1000 - 387", "45 / 9 + 2"],
    "unit": ["km", "miles", "kg", "pounds", "celsius", "fahrenheit", "meters", "feet", "liters", "gallons",
             "inches", "cm", "ounces", "grams"],
    "number": [3, 5, 12, 20, 42, 100, 2.5, 7.25, 65, 180, 0.5, 1500],
}


def cjson(obj):
    """Canonical JSON as the chat template writes calls: ', ' and ': ', UTF-8 kept, schema order."""
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": "))


def load_tools():
    for k, v in EXTRA_POOLS.items():
        bank.POOLS.setdefault(k, v)
    split = split_mod.load()
    fams = {f.name: f for f in bank.load_bank()}
    demo = bank.load_bank(HERE / "demo.txt")[0]
    train = [fams[n] for n in split["train_families"]]
    held = [fams[n] for n in split["held_out_families"]]
    return train, held, demo


def speak(v):
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, list):
        v = [str(x) for x in v]
        return v[0] if len(v) == 1 else ", ".join(v[:-1]) + " and " + v[-1]
    return str(v)


class Gen:
    def __init__(self, rng, families, demo, held_out):
        self.rng, self.families, self.demo = rng, families, demo
        self.tools = [t for f in families for t in f.tools]
        w = "HELD_OUT_" if held_out else "TRAIN_"
        self.wrappers = getattr(W, w + "WRAPPERS")
        self.contexts = getattr(W, w + "CONTEXTS")
        self.joins = getattr(W, w + "JOINS")
        self.systems = getattr(W, w + "SYSTEMS")
        self.talk = getattr(W, w + "TALK")
        self.knowledge = getattr(W, w + "KNOWLEDGE")

    # -- tool lists ---------------------------------------------------------------------------------------
    def toolset(self, family=None):
        """2-4 tools of one family (similar on purpose, so that choosing is learnt) and 1-3 of others."""
        rng = self.rng
        fam = family or rng.choice(self.families)
        own = rng.sample(fam.tools, min(len(fam.tools), rng.randint(2, 4)))
        others = [t for t in self.tools if t.family != fam.name]
        tools = own + rng.sample(others, rng.randint(1, 3))
        rng.shuffle(tools)
        return tools

    def schemas(self, tools):
        out = []
        for t in tools:
            s = t.schema()
            if self.rng.random() < 0.25:  # pages often leave the parameters undescribed
                for p in s["function"]["parameters"]["properties"].values():
                    p.pop("description", None)
            out.append(s)
        return out

    # -- one request ----------------------------------------------------------------------------------------
    def request(self, tool, wrap=True):
        """(text, arguments) for a request to `tool`, its values drawn fresh and copied into the call."""
        rng = self.rng
        say = rng.choice(tool.says)
        slots = bank.say_params(say)
        params = {p.name: p for p in tool.params}
        args, shown = {}, {}
        for name, preset in slots.items():
            p = params[name]
            if preset is not None:
                args[name] = preset
                continue
            if p.type == "enum":
                v = rng.choice(p.enum)
            elif p.type == "boolean":
                v = rng.choice([True, False])
            elif p.type == "array":
                v = []
                while len(v) < rng.randint(1, 3):
                    x = bank.draw(p.kind, rng)
                    if x not in v:
                        v.append(x)
            else:
                v = bank.draw(p.kind, rng)
                if p.type == "integer":
                    v = int(v) if isinstance(v, (int, float)) else v
            args[name] = v
            shown[name] = speak(v)
        text = bank.render_say(say, shown)
        order = [p.name for p in tool.params]
        args = {k: args[k] for k in order if k in args}
        if wrap:
            text = self.wrap(text)
        return text, args

    def wrap(self, phrase):
        rng = self.rng
        w = rng.choice(self.wrappers)
        text = w.replace("{s}", phrase).replace("{S}", phrase[:1].upper() + phrase[1:])
        if rng.random() < 0.15:
            text = rng.choice(self.contexts) + " " + text
        if rng.random() < 0.1:
            text = typo(text, rng)
        return text

    def result(self, tool, args):
        return bank.fill_result(tool, args, self.rng)

    def answer(self, tool, args, res):
        flat = {k: speak(v) if isinstance(v, (list, bool)) else v for k, v in res.items()}
        shown = {k: speak(v) for k, v in args.items()}
        return bank.render_answer(self.rng.choice(tool.answers), flat, shown)

    def decline(self, tool, names):
        cap = tool.description.rstrip(".")
        cap = cap[:1].lower() + cap[1:]
        return self.rng.choice(W.DECLINES).format(cap=cap, names=", ".join(names))

    def talk_answer(self, names):
        return "I can help with these tools: " + ", ".join(names) + ". What would you like to do?"

    # -- exchanges (appended to msgs) -----------------------------------------------------------------------
    def ex_call(self, tools, msgs, error=False):
        t = self.rng.choice(tools)
        text, args = self.request(t)
        msgs.append({"role": "user", "content": text})
        msgs.append(call([(t.name, args)]))
        if error and t.errors:
            err = bank.render_answer(self.rng.choice(t.errors), {}, {k: speak(v) for k, v in args.items()})
            msgs.append({"role": "tool", "content": "error: " + err})
            msgs.append({"role": "assistant", "content": self.rng.choice(W.ERROR_ANSWERS).format(err=err)})
        else:
            res = self.result(t, args)
            msgs.append({"role": "tool", "content": cjson(res)})
            msgs.append({"role": "assistant", "content": self.answer(t, args, res)})

    def ex_two(self, tools, msgs):
        rng = self.rng
        t1, t2 = rng.sample(tools, 2)
        (q1, a1), (q2, a2) = self.request(t1, wrap=False), self.request(t2, wrap=False)
        msgs.append({"role": "user", "content": self.wrap(q1 + rng.choice(self.joins) + q2)})
        msgs.append(call([(t1.name, a1), (t2.name, a2)]))
        r1, r2 = self.result(t1, a1), self.result(t2, a2)
        msgs.append({"role": "tool", "content": cjson(r1)})
        msgs.append({"role": "tool", "content": cjson(r2)})
        msgs.append({"role": "assistant", "content": self.answer(t1, a1, r1) + " " + self.answer(t2, a2, r2)})

    def ex_absent(self, tools, msgs, pool):
        names = [t.name for t in tools]
        t = self.rng.choice([t for t in pool if t.name not in names])
        text, _ = self.request(t)
        msgs.append({"role": "user", "content": text})
        msgs.append({"role": "assistant", "content": self.decline(t, names)})

    def ex_talk(self, tools, msgs):
        rng = self.rng
        if rng.random() < 0.5:
            q, answers = rng.choice(self.talk)
            a = rng.choice(answers) if answers else self.talk_answer([t.name for t in tools])
        else:
            q, a = rng.choice(self.knowledge)
        msgs.append({"role": "user", "content": q})
        msgs.append({"role": "assistant", "content": a})

    def conversation(self):
        rng = self.rng
        demo = rng.random() < 0.08
        tools = self.toolset(self.demo if demo else None)
        msgs = [{"role": "system", "content": rng.choice(self.systems)}] if rng.random() < 0.8 else []
        for _ in range(rng.choice([1, 1, 2, 2, 3, 4, 5, 6])):
            k = rng.random()
            if k < 0.55:
                self.ex_call(tools, msgs)
            elif k < 0.63:
                self.ex_call(tools, msgs, error=True)
            elif k < 0.73:
                self.ex_two(tools, msgs)
            elif k < 0.86:
                self.ex_absent(tools, msgs, self.tools)
            else:
                self.ex_talk(tools, msgs)
        return {"tools": self.schemas(tools), "messages": msgs}


def call(pairs):
    return {"role": "assistant", "content": None,
            "tool_calls": [{"type": "function", "function": {"name": n, "arguments": cjson(a)}} for n, a in pairs]}


def typo(text, rng):
    """Swaps two neighbouring letters of one longer word that is not a value (values are copied exactly)."""
    words = text.split(" ")
    idx = [i for i, w in enumerate(words) if w.isalpha() and w.islower() and len(w) > 4]
    if not idx:
        return text
    i = rng.choice(idx)
    w = words[i]
    j = rng.randrange(1, len(w) - 2)
    words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2:]
    return " ".join(words)


# -- evaluation -----------------------------------------------------------------------------------------------

def eval_cases(held, demo, seed=0):
    rng = random.Random(seed)
    g = Gen(rng, held, demo, held_out=True)
    gd = Gen(rng, [demo], demo, held_out=True)
    cases = []

    def add(cat, tools, msgs, expect):
        cases.append({"id": f"{cat}-{len(cases)}", "category": cat, "tools": g.schemas(tools),
                      "messages": msgs, "expect": expect})

    def system():
        return [{"role": "system", "content": rng.choice(g.systems)}]

    for _ in range(200):
        tools = g.toolset()
        target = rng.choice(tools)
        text, args = g.request(target)
        add("call", tools, system() + [{"role": "user", "content": text}],
            {"calls": [{"name": target.name, "arguments": args}]})
    for _ in range(30):
        tools = g.toolset()
        t1, t2 = rng.sample(tools, 2)
        (q1, a1), (q2, a2) = g.request(t1, wrap=False), g.request(t2, wrap=False)
        add("two", tools, system() + [{"role": "user", "content": g.wrap(q1 + rng.choice(g.joins) + q2)}],
            {"calls": [{"name": t1.name, "arguments": a1}, {"name": t2.name, "arguments": a2}]})
    for q, answers in g.talk:
        add("no_call", g.toolset(), system() + [{"role": "user", "content": q}], {"calls": []})
    for q, a in g.knowledge:
        add("no_call", g.toolset(), system() + [{"role": "user", "content": q}], {"calls": [], "contains": [a]})
    for _ in range(40):
        tools = g.toolset()
        names = [t.name for t in tools]
        absent = rng.choice([t for t in g.tools if t.name not in names and t.family not in {x.family for x in tools}])
        text, _ = g.request(absent)
        add("absent", tools, system() + [{"role": "user", "content": text}], {"calls": []})
    for _ in range(60):
        tools = g.toolset()
        t = rng.choice(tools)
        text, args = g.request(t)
        res = g.result(t, args)
        msgs = system() + [{"role": "user", "content": text}, call([(t.name, args)]),
                           {"role": "tool", "content": cjson(res)}]
        add("answer", tools, msgs, {"calls": [], "contains": result_values(res)})
    for _ in range(20):
        tools = [t for t in g.toolset() if t.errors] or g.toolset()
        t = rng.choice([t for t in tools if t.errors] or tools)
        text, args = g.request(t)
        err = bank.render_answer(rng.choice(t.errors), {}, {k: speak(v) for k, v in args.items()}) if t.errors \
            else "Service unavailable"
        msgs = system() + [{"role": "user", "content": text}, call([(t.name, args)]),
                           {"role": "tool", "content": "error: " + err}]
        add("error", tools, msgs, {"calls": [], "contains": [err]})
    for conv in range(5):
        tools = g.toolset()
        tools = tools + [t for t in rng.sample(g.tools, 3) if t not in tools]
        msgs = system()
        for turn in range(10):
            t = rng.choice(tools)
            text, args = g.request(t)
            cases.append({"id": f"multiturn-{conv}-{turn}", "category": "multiturn", "conversation": conv,
                          "tools": g.schemas(tools) if turn == 0 else cases[-1]["tools"],
                          "messages": msgs + [{"role": "user", "content": text}],
                          "expect": {"calls": [{"name": t.name, "arguments": args}]}})
            res = g.result(t, args)
            msgs = msgs + [{"role": "user", "content": text}, call([(t.name, args)]),
                           {"role": "tool", "content": cjson(res)},
                           {"role": "assistant", "content": g.answer(t, args, res)}]
    for _ in range(60):
        tools = list(demo.tools)
        t = rng.choice(tools)
        text, args = gd.request(t)
        add("demo", tools, system() + [{"role": "user", "content": text}],
            {"calls": [{"name": t.name, "arguments": args}]})
    return cases


def result_values(res):
    out = []
    for v in res.values():
        if isinstance(v, list):
            out += [speak(x) for x in v if not isinstance(x, (dict, list))]
        elif not isinstance(v, dict):
            out.append(speak(v))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--eval", action="store_true")
    a = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    train, held, demo = load_tools()
    if a.eval:
        cases = eval_cases(held, demo)
        with open(OUT / "eval.jsonl", "w") as f:
            for c in cases:
                f.write(json.dumps(c, ensure_ascii=False) + "\n")
        print(f"{len(cases)} evaluation cases -> {OUT / 'eval.jsonl'}")
    if a.train:
        g = Gen(random.Random(a.seed), train, demo, held_out=False)
        with open(OUT / "train.jsonl", "w") as f:
            for _ in range(a.train):
                f.write(json.dumps(g.conversation(), ensure_ascii=False) + "\n")
        print(f"{a.train} conversations -> {OUT / 'train.jsonl'}")


if __name__ == "__main__":
    main()
