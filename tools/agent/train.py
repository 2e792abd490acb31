"""LoRA fine-tuning of SmolLM2-135M-Instruct for tool use, on the CPU (run by hand, never in CI).

    python3 tools/agent/train.py --minutes 80                     # from the base model
    python3 tools/agent/train.py --minutes 60 --resume tools/agent/out/adapter   # go on from a checkpoint

Loss only on the assistant's turns (calls, answers, declines). The learning rate warms up, then follows a
cosine over the time budget (so a run of any length ends annealed). Every --save-minutes the adapter is
saved to out/adapter (peft format; export_gguf.py turns it into the GGUF adapter the runtime loads), and
each step is logged to out/train.log.
"""
import argparse
import json
import math
import random
import time

import torch
from peft import LoraConfig, PeftModel, get_peft_model

from common import LORA_ALPHA, LORA_RANK, OUT, TARGETS, load_base, render


def encode(tok, conv, max_len):
    """Token ids and labels (-100 outside assistant turns) of one conversation, or None when too long."""
    msgs, tools = conv["messages"], conv["tools"]
    ids, labels, done = [], [], ""
    for i, m in enumerate(msgs):
        if m["role"] != "assistant":
            continue
        prefix = render(msgs[:i], tools, add_generation_prompt=True)
        full = render(msgs[:i + 1], tools)
        assert prefix.startswith(done) and full.startswith(prefix)
        ctx = tok(prefix[len(done):], add_special_tokens=False)["input_ids"]
        out = tok(full[len(prefix):], add_special_tokens=False)["input_ids"]
        ids += ctx + out
        labels += [-100] * len(ctx) + out
        done = full
    if not ids or len(ids) > max_len:
        return None
    return ids, labels


def native_bf16():
    """Whether this CPU has bf16 instructions (AVX-512 BF16 or AMX); torch emulates bf16 elsewhere."""
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def batches(examples, budget, rng):
    """Batches of similar lengths holding at most `budget` tokens with padding."""
    order = sorted(range(len(examples)), key=lambda i: len(examples[i][0]) + rng.random())
    out, cur = [], []
    for i in order:
        longest = max([len(examples[j][0]) for j in cur] + [len(examples[i][0])])
        if cur and longest * (len(cur) + 1) > budget:
            out.append(cur)
            cur = []
        cur.append(i)
    if cur:
        out.append(cur)
    rng.shuffle(out)
    return out


def collate(examples, idx, pad):
    n = max(len(examples[i][0]) for i in idx)
    ids = torch.full((len(idx), n), pad, dtype=torch.long)
    labels = torch.full((len(idx), n), -100, dtype=torch.long)
    mask = torch.zeros((len(idx), n), dtype=torch.long)
    for r, i in enumerate(idx):
        x, y = examples[i]
        ids[r, :len(x)] = torch.tensor(x)
        labels[r, :len(y)] = torch.tensor(y)
        mask[r, :len(x)] = 1
    return ids, labels, mask


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(OUT / "train.jsonl"))
    ap.add_argument("--minutes", type=float, default=80)
    ap.add_argument("--lr", type=float, default=4e-4)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--budget", type=int, default=2048, help="tokens per batch, padding included")
    ap.add_argument("--max-len", type=int, default=1024)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--save-minutes", type=float, default=10)
    ap.add_argument("--resume")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bf16", choices=["auto", "on", "off"], default="auto",
                    help="bf16 autocast; auto: only where the CPU computes bf16 natively (elsewhere it is ~20x slower)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    bf16 = a.bf16 == "on" or (a.bf16 == "auto" and native_bf16())
    print(f"autocast: {'bf16' if bf16 else 'off (fp32)'}", flush=True)
    torch.manual_seed(a.seed)
    rng = random.Random(a.seed)

    tok, base = load_base()
    if a.resume:
        model = PeftModel.from_pretrained(base, a.resume, is_trainable=True)
    else:
        cfg = LoraConfig(r=LORA_RANK, lora_alpha=LORA_ALPHA, lora_dropout=0.05, target_modules=list(TARGETS),
                         task_type="CAUSAL_LM")
        model = get_peft_model(base, cfg)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    print(f"trainable parameters: {sum(p.numel() for p in params):,}", flush=True)
    opt = torch.optim.AdamW(params, lr=a.lr, weight_decay=0.0)

    examples = [e for e in (encode(tok, json.loads(line), a.max_len) for line in open(a.data)) if e]
    n_tok = sum(len(e[0]) for e in examples)
    n_lab = sum(sum(1 for y in e[1] if y != -100) for e in examples)
    print(f"{len(examples)} conversations, {n_tok:,} tokens ({n_lab:,} trained on)", flush=True)

    log = open(OUT / "train.log", "a")
    log.write(json.dumps({"start": time.strftime("%Y-%m-%d %H:%M:%S"), "args": vars(a), "conversations": len(examples),
                          "tokens": n_tok}) + "\n")
    start = last_save = time.time()
    step, seen, epoch = 0, 0, 0
    budget_s = a.minutes * 60
    while True:
        for idx in batches(examples, a.budget, rng):
            elapsed = time.time() - start
            if elapsed >= budget_s:
                break
            frac = elapsed / budget_s
            lr = a.lr * min(1.0, (step + 1) / a.warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
            for g in opt.param_groups:
                g["lr"] = lr
            ids, labels, mask = collate(examples, idx, tok.pad_token_id or 0)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            step += 1
            seen += int(mask.sum())
            rate = seen / (time.time() - start)
            log.write(json.dumps({"step": step, "epoch": epoch, "loss": round(loss.item(), 4), "lr": round(lr, 7),
                                  "tokens": seen, "tok_s": round(rate, 1)}) + "\n")
            log.flush()
            if step % 10 == 0:
                print(f"step {step} epoch {epoch} loss {loss.item():.4f} lr {lr:.2e} {rate:.0f} tok/s "
                      f"{elapsed / 60:.1f} min", flush=True)
            if time.time() - last_save > a.save_minutes * 60:
                model.save_pretrained(OUT / "adapter")
                last_save = time.time()
        else:
            epoch += 1
            continue
        break
    model.save_pretrained(OUT / "adapter")
    log.write(json.dumps({"end": time.strftime("%Y-%m-%d %H:%M:%S"), "steps": step, "tokens": seen}) + "\n")
    print(f"done: {step} steps, {seen:,} tokens -> {OUT / 'adapter'}", flush=True)


if __name__ == "__main__":
    main()
