"""Writes a Wisp bundle manifest (manifest.json, format wisp-bundle/1) for model files in one folder.

    python3 tools/make_bundle.py DIR --name NAME --weights model.safetensors [--config config.json]
        [--tokenizer tokenizer.json] [--chat-template chat_template.jinja] [--tool-call-format hermes]
        [--stop '<|im_end|>'] [--context-length 512] [--adapter adapter.gguf] [--out manifest.json]

Paths are relative to DIR; each file's sha256 and size are recorded so the loader can verify downloads.
"""
import argparse
import hashlib
import json
import pathlib


def entry(folder, path):
    data = (folder / path).read_bytes()
    return {"path": path, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", type=pathlib.Path)
    ap.add_argument("--name", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--config")
    ap.add_argument("--tokenizer")
    ap.add_argument("--chat-template")
    ap.add_argument("--tool-call-format", choices=["hermes", "llama3_json"])
    ap.add_argument("--stop", action="append", default=[])
    ap.add_argument("--context-length", type=int)
    ap.add_argument("--adapter", action="append", default=[], help="a LoRA adapter (GGUF) over the weights")
    ap.add_argument("--out", default="manifest.json")
    a = ap.parse_args()
    files = {"weights": entry(a.dir, a.weights)}
    for role, path in [("config", a.config), ("tokenizer", a.tokenizer), ("chat_template", a.chat_template)]:
        if path:
            files[role] = entry(a.dir, path)
    if a.adapter:
        files["adapters"] = [entry(a.dir, p) for p in a.adapter]
    manifest = {"format": "wisp-bundle/1", "name": a.name, "files": files}
    if a.tool_call_format:
        manifest["tool_call_format"] = a.tool_call_format
    if a.stop:
        manifest["stop"] = a.stop
    if a.context_length:
        manifest["context_length"] = a.context_length
    (a.dir / a.out).write_text(json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    main()
