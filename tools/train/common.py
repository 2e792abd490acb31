"""Shared helpers: the chat template (rendered with jinja2, exactly as the Rust side renders it with minijinja)
and the canonical JSON form."""
import json
import pathlib

import jinja2

HERE = pathlib.Path(__file__).resolve().parent
TEMPLATE_PATH = HERE / "chat_template.jinja"
OUT = HERE / "out"
MODEL_DIR = HERE.parent.parent / "models" / "wisp-mini"

_env = jinja2.Environment()  # defaults: no trim_blocks / lstrip_blocks, autoescape off
_tpl = _env.from_string(TEMPLATE_PATH.read_text())


def render(messages, tools=None, add_generation_prompt=False):
    return _tpl.render(messages=messages, tools=tools or [], add_generation_prompt=add_generation_prompt)


def cjson(obj):
    """Canonical JSON: keys in insertion (schema) order, ', ' and ': ' separators, UTF-8 kept."""
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": "))
