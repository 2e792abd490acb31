"""Train the Wisp default model (CPU, two threads) and export it to models/wisp-mini/.

    python3 tools/train/train.py --data mix --minutes 66   (tools/train/README.md has the whole recipe)

Loss only on assistant tokens (everything after `<|im_start|>assistant\\n` up to and including `<|im_end|>`).
The learning-rate schedule follows wall-clock time, so the run ends on time whatever the machine's speed.
"""
import argparse
import json
import math
import random
import shutil
import time

import numpy as np
import torch
import torch.nn.functional as F
from tokenizers import Tokenizer

from common import MODEL_DIR, OUT, TEMPLATE_PATH
from evaluate import parse_calls, same
from model import LlamaForCausalLM, greedy, hf_state_dict

CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 192,
    "intermediate_size": 512,
    "num_attention_heads": 6,
    "num_key_value_heads": 2,
    "num_hidden_layers": 4,
    "vocab_size": 2048,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "tie_word_embeddings": True,
    "max_position_embeddings": 1024,
    "hidden_act": "silu",
    "attention_bias": False,
    "torch_dtype": "float16",
    "bos_token_id": 1,
    "eos_token_id": 2,
    "pad_token_id": 0,
}


def assistant_mask(ids, tok):
    im_start, im_end = tok.token_to_id("<|im_start|>"), tok.token_to_id("<|im_end|>")
    asst, nl = tok.token_to_id("assistant"), tok.token_to_id("Ċ")
    m = np.zeros(len(ids), dtype=bool)
    i, on = 0, False
    while i < len(ids):
        if not on and ids[i] == im_start and i + 2 < len(ids) and ids[i + 1] == asst and ids[i + 2] == nl:
            on = True
            i += 3
            continue
        if on:
            m[i] = True
            if ids[i] == im_end:
                on = False
        i += 1
    return m


def load_data(tok, max_len, name="train"):
    texts = [json.loads(l)["text"] for l in open(OUT / f"{name}.jsonl")]
    encs = tok.encode_batch(texts)
    data = []
    for e in encs:
        ids = e.ids
        if len(ids) > max_len:
            continue
        data.append((np.array(ids, dtype=np.int64), assistant_mask(ids, tok)))
    return data


def batches(data, budget, rng):
    """Length-bucketed batches of about `budget` tokens (padded)."""
    idx = list(range(len(data)))
    rng.shuffle(idx)
    out = []
    for c in range(0, len(idx), 256):
        chunk = sorted(idx[c:c + 256], key=lambda i: len(data[i][0]))
        cur = []
        for i in chunk:
            L = max([len(data[j][0]) for j in cur + [i]])
            if cur and L * (len(cur) + 1) > budget:
                out.append(cur)
                cur = []
            cur.append(i)
        if cur:
            out.append(cur)
    rng.shuffle(out)
    return out


def collate(data, b):
    L = max(len(data[i][0]) for i in b)
    x = torch.zeros(len(b), L, dtype=torch.long)
    y = torch.full((len(b), L), -100, dtype=torch.long)
    for r, i in enumerate(b):
        ids, m = data[i]
        n = len(ids)
        x[r, :n] = torch.from_numpy(ids)
        tgt = np.where(m[1:], ids[1:], -100)
        y[r, :n - 1] = torch.from_numpy(tgt)
    return x, y


@torch.no_grad()
def val_loss(model, data, vb):
    model.eval()
    tot, n = 0.0, 0
    for b in vb:
        x, y = collate(data, b)
        lg = model(x)
        loss = F.cross_entropy(lg.view(-1, lg.shape[-1]), y.view(-1), reduction="sum", ignore_index=-100)
        tot += float(loss)
        n += int((y != -100).sum())
    model.train()
    return tot / max(n, 1)


def probe_cases(tok, n):
    """About n held-out demo tool-call cases from out/eval.jsonl, spread over the tools (a quick copy metric)."""
    cases = [c for c in map(json.loads, open(OUT / "eval.jsonl")) if c["group"] == "demo" and c["kind"] == "call"]
    cases = [cases[int(i * len(cases) / n)] for i in range(min(n, len(cases)))]
    return [(tok.encode(c["prompt"]).ids, c["expect"]) for c in cases]


@torch.no_grad()
def probe(model, cases, stops, tok):
    """Greedy decoding: (right tool, exact call) counts."""
    model.eval()
    tool = exact = 0
    for ids, exp in cases:
        out, _ = greedy(model, ids, 80, stops)
        calls, ok = parse_calls(tok.decode([i for i in out if i not in stops], skip_special_tokens=False))
        if ok and len(calls) == 1 and calls[0] and calls[0]["name"] == exp["name"]:
            tool += 1
            exact += same(calls[0]["arguments"], exp["arguments"])
    model.train()
    return tool, exact


def load_weights(model, path):
    """A state_dict checkpoint (.pt) or exported F16 weights (.safetensors, upcast to f32)."""
    if path.endswith(".safetensors"):
        from safetensors.torch import load_file
        model.load_state_dict({k: v.float() for k, v in load_file(path).items()})
    else:
        model.load_state_dict(torch.load(path))


def export(model, tok):
    from safetensors.torch import save_file
    MODEL_DIR.mkdir(parents=True, exist_ok=True)
    sd = {k: v.to(torch.float16) for k, v in hf_state_dict(model).items()}
    save_file(sd, str(MODEL_DIR / "model.safetensors"), metadata={"format": "pt"})
    (MODEL_DIR / "config.json").write_text(json.dumps(CONFIG, indent=2) + "\n")
    shutil.copy(OUT / "tokenizer.json", MODEL_DIR / "tokenizer.json")
    shutil.copy(TEMPLATE_PATH, MODEL_DIR / "chat_template.jinja")
    gen = {"eos_token_id": [tok.token_to_id("<|im_end|>"), tok.token_to_id("<|endoftext|>")],
           "stop_tokens": ["<|im_end|>", "<|endoftext|>"], "bos_token_id": None,
           "pad_token_id": tok.token_to_id("<|endoftext|>"), "do_sample": False, "max_new_tokens": 256}
    (MODEL_DIR / "generation.json").write_text(json.dumps(gen, indent=2) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=68)
    ap.add_argument("--budget", type=int, default=4096, help="tokens per batch (padded)")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default="train", help="out/DATA.jsonl")
    ap.add_argument("--resume", default=None,
                    help="continue from a state_dict checkpoint or a model.safetensors (fresh optimizer and schedule)")
    ap.add_argument("--probe-minutes", type=float, default=5, help="how often to run the held-out copy probe")
    ap.add_argument("--probe-cases", type=int, default=40)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)

    tok = Tokenizer.from_file(str(OUT / "tokenizer.json"))
    assert tok.get_vocab_size() == CONFIG["vocab_size"]
    t0 = time.time()
    data = load_data(tok, CONFIG["max_position_embeddings"], args.data)
    val, data = data[:300], data[300:]
    n_tok = sum(len(d[0]) for d in data)
    n_asst = sum(int(d[1].sum()) for d in data)
    print(f"data: {len(data)} conversations, {n_tok} tokens, {n_asst} assistant (loss) tokens; "
          f"val {len(val)}; prepared in {time.time() - t0:.0f}s", flush=True)
    vb = batches(val, args.budget, random.Random(1))
    pcases = probe_cases(tok, args.probe_cases)
    stops = {tok.token_to_id("<|im_end|>"), tok.token_to_id("<|endoftext|>")}

    model = LlamaForCausalLM(CONFIG)
    if args.resume:
        load_weights(model, args.resume)
        print(f"resumed from {args.resume}", flush=True)
    n_par = sum(p.numel() for p in model.parameters())
    print(f"model: {n_par} parameters; config {json.dumps(CONFIG)}", flush=True)
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    budget_s = args.minutes * 60
    start = time.time()
    step, epoch, seen_tok, last_val, last_probe = 0, 0, 0, start, start - args.probe_minutes * 60
    ema = None
    done = False
    while not done:
        epoch += 1
        for b in batches(data, args.budget, rng):
            el = time.time() - start
            prog = el / budget_s
            if prog >= 1.0:
                done = True
                break
            lr = args.lr * min(1.0, (step + 1) / args.warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * prog)))
            for g in opt.param_groups:
                g["lr"] = lr
            x, y = collate(data, b)
            lg = model(x)
            loss = F.cross_entropy(lg.view(-1, lg.shape[-1]), y.view(-1), ignore_index=-100)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            seen_tok += x.numel()
            ema = float(loss) if ema is None else 0.98 * ema + 0.02 * float(loss)
            if step % 25 == 0:
                print(f"step {step} epoch {epoch} t {el / 60:.1f}m tokens {seen_tok} lr {lr:.2e} loss {float(loss):.4f} "
                      f"ema {ema:.4f} gnorm {float(gn):.2f}", flush=True)
            if time.time() - last_val > 600:
                last_val = time.time()
                print(f"val step {step} t {el / 60:.1f}m val_loss {val_loss(model, val, vb):.4f}", flush=True)
                torch.save(model.state_dict(), OUT / "ckpt.pt")
            if time.time() - last_probe > args.probe_minutes * 60:
                last_probe = time.time()
                tool, exact = probe(model, pcases, stops, tok)
                print(f"probe step {step} t {el / 60:.1f}m held-out demo calls: right tool {tool}/{len(pcases)} "
                      f"exact {exact}/{len(pcases)} ({time.time() - last_probe:.0f}s)", flush=True)
                torch.save(model.state_dict(), OUT / f"ckpt_step{step}.pt")
    el = time.time() - start
    print(f"done: {step} steps, {epoch} epochs (last partial), {seen_tok} tokens, {el / 60:.1f} min; "
          f"final val_loss {val_loss(model, val, vb):.4f}", flush=True)
    torch.save(model.state_dict(), OUT / "ckpt.pt")
    export(model, tok)
    print("exported to", MODEL_DIR, flush=True)


if __name__ == "__main__":
    main()
