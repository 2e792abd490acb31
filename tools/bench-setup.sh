#!/usr/bin/env bash
# What `npm run bench` needs beyond the test set-up: the native llama.cpp peer, llama-cpp-python 0.3.36
# built from source for this CPU (GGML_NATIVE; ~6 min on an idle 2-core machine, once), and the Python
# packages of the ONNX exports. Installs only what is missing.
set -euo pipefail
if ! python3 -c 'import llama_cpp, sys; sys.exit(llama_cpp.__version__ != "0.3.36")' 2>/dev/null; then
  echo "bench set-up: building llama-cpp-python 0.3.36 (GGML_NATIVE)"
  CMAKE_ARGS="-DGGML_NATIVE=ON" python3 -m pip install --no-cache-dir "llama-cpp-python==0.3.36"
fi
python3 -c 'import numpy, onnx, gguf, safetensors' 2>/dev/null ||
  python3 -m pip install numpy onnx gguf safetensors onnxruntime
