"""Golden fixtures for the Rust tests: tests/fixtures/bundled/golden.json.

    OMP_NUM_THREADS=1 python3 tools/train/golden.py

For 3 fixed prompts rendered through chat_template.jinja (a demo tool call, a second step after a tool
response, a no-tool chat): the prompt text, its token ids, the logits of the last position (full vocabulary,
rounded to 6 decimals) and the greedy continuation of 32 tokens (no stop tokens applied, so always 32; ids and
text, plus the text up to the first stop token). Computed with PyTorch from the saved F16 weights upcast to
f32, with a full forward pass over the whole sequence at every step (no KV cache).
"""
import json
import pathlib

import torch
from tokenizers import Tokenizer

from common import MODEL_DIR, cjson, render
from model import load_safetensors

FIXTURE = MODEL_DIR.parent.parent / "tests" / "fixtures" / "bundled" / "golden.json"


def demo_tools():
    s = lambda d: {"type": "string", "description": d}
    f = lambda name, desc, props, req: {"type": "function", "function": {
        "name": name, "description": desc, "parameters": {"type": "object", "properties": props, "required": req}}}
    return [
        f("get_weather", "Get the current weather for a city.", {"city": s("City name")}, ["city"]),
        f("get_time", "Get the current local time in a city.", {"city": s("City name")}, ["city"]),
        f("calculate", "Evaluate a math expression.", {"expression": s("The expression to evaluate")}, ["expression"]),
        f("convert_units", "Convert a value from one unit to another.",
          {"value": {"type": "number", "description": "The value to convert"}, "from": s("Unit to convert from"),
           "to": s("Unit to convert to")}, ["value", "from", "to"]),
        f("add_note", "Save a note.", {"text": s("The note text")}, ["text"]),
        f("list_notes", "List all saved notes.", {}, []),
    ]


def prompts():
    tools = demo_tools()
    sys = {"role": "system", "content": "You are a helpful assistant."}
    return [
        ("tool_call", [sys, {"role": "user", "content": "What's the weather in Paris?"}], tools),
        ("after_tool_response", [
            sys, {"role": "user", "content": "What's the weather in Paris?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"type": "function", "function": {"name": "get_weather", "arguments": cjson({"city": "Paris"})}}]},
            {"role": "tool", "content": cjson({"temperature_c": 18, "condition": "sunny"})}], tools),
        ("no_tool_chat", [sys, {"role": "user", "content": "Hello! How are you?"}], tools),
    ]


@torch.no_grad()
def main():
    torch.set_num_threads(1)
    tok = Tokenizer.from_file(str(MODEL_DIR / "tokenizer.json"))
    model, cfg = load_safetensors(MODEL_DIR)
    stops = {tok.token_to_id("<|im_end|>"), tok.token_to_id("<|endoftext|>")}
    out = {"reference": f"PyTorch {torch.__version__}",
           "model": "models/wisp-mini (model.safetensors F16, upcast to f32)",
           "note": "full forward per step, greedy argmax, 32 new tokens without stopping; logits of the last prompt position",
           "cases": []}
    for name, msgs, tools in prompts():
        text = render(msgs, tools, add_generation_prompt=True)
        ids = tok.encode(text, add_special_tokens=False).ids
        assert tok.decode(ids, skip_special_tokens=False) == text
        seq = list(ids)
        last_logits = None
        gen = []
        for i in range(32):
            logits = model(torch.tensor([seq]))[0, -1]
            if i == 0:
                last_logits = logits
            nxt = int(torch.argmax(logits))
            gen.append(nxt)
            seq.append(nxt)
        until = []
        for t in gen:
            if t in stops:
                break
            until.append(t)
        out["cases"].append({
            "name": name, "messages": msgs, "tools": tools, "prompt": text, "token_ids": ids,
            "last_logits": [round(float(x), 6) for x in last_logits],
            "greedy_ids": gen, "greedy_text": tok.decode(gen, skip_special_tokens=False),
            "greedy_text_until_stop": tok.decode(until, skip_special_tokens=False),
        })
        print(name, len(ids), "tokens ->", repr(out["cases"][-1]["greedy_text_until_stop"]))
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(json.dumps(out, ensure_ascii=False) + "\n")
    print("wrote", FIXTURE, FIXTURE.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
