#!/usr/bin/env bash
# Fuzzes what reads untrusted input (docs/reliability.md, "Fuzzing"): the GGUF reader and model load, the
# bundle manifest, the tool-call parser, the chat templates, tool schemas and response formats. cargo-fuzz
# (libFuzzer) targets in tests/fuzz/.
#     bash tools/fuzz.sh [SECONDS] [TARGET...]      # default: 10 seconds each, every target
# New inputs go to target/fuzz/corpus/TARGET; the committed seeds (tests/fuzz/corpus/TARGET) are only read.
# A failure stops the script; its input is in tests/fuzz/artifacts/TARGET/ and
# `cargo +nightly fuzz run --fuzz-dir tests/fuzz --target-dir target/fuzz --codegen-units 16 TARGET FILE`
# replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(gguf manifest toolcall template schema)

# Same flags for build and run, or `run` builds again. 16 codegen units build the dependencies (wgpu,
# tokenizers, llguidance, ...) much faster than cargo-fuzz's default of 1, for slightly slower runs.
flags=(--fuzz-dir tests/fuzz --target-dir target/fuzz --codegen-units 16)
cargo +nightly fuzz build "${flags[@]}"
for t in "${targets[@]}"; do
  mkdir -p "target/fuzz/corpus/$t"
  echo "fuzz: $t for ${seconds}s"
  # -malloc_limit_mb: no input of this size may need a 512 MiB allocation (a declared count or size must
  # be checked against the bytes first); -timeout: one input may not take 10 s (a hang).
  cargo +nightly fuzz run "${flags[@]}" "$t" "target/fuzz/corpus/$t" "tests/fuzz/corpus/$t" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 \
    -dict="tests/fuzz/dicts/$t.dict" -print_final_stats=1
done
