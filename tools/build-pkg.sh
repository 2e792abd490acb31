#!/usr/bin/env bash
# Builds the npm package into pkg/: four wasm modules with their wasm-bindgen glue, and the hand-written
# files of pkg-templates/. The modules: the main one (WebGPU and the CPU backend on one thread) and the
# threaded CPU one (`wisp_core_mt`), each also as a relaxed-SIMD build (`*_relaxed`) that index.js picks
# where the engine validates relaxed SIMD. No wasm-opt: its -Oz made the CPU kernels 10-20% slower in
# Chromium and the gzipped modules larger (docs/performance.md, "Package size"), and Debian's binaryen 108 cannot read
# relaxed-SIMD opcodes.
#     bash tools/build-pkg.sh [--if-changed]
# --if-changed (npm run demo, ask, build): keeps pkg/ when it was built from the same inputs
# (tools/pkg-inputs.sh), so that a second `npm run ask` starts in seconds instead of compiling our crate
# four times again (minutes). `npm test` always builds.
set -euo pipefail
cd "$(dirname "$0")/.."

# Taken before building: a file changed during the build then makes the next --if-changed build again.
inputs=$(bash tools/pkg-inputs.sh)
stamp=target/pkg-inputs.sha256
if [ "${1:-}" = "--if-changed" ] && [ -f pkg/files.json ] && [ "$(cat "$stamp" 2>/dev/null)" = "$inputs" ]; then
  echo "pkg/: up to date (built from these inputs; tools/build-pkg.sh without --if-changed rebuilds it)"
  exit 0
fi
rm -f "$stamp"
rm -rf pkg
# `glue NAME WASM`: pkg/NAME.js and pkg/NAME_bg.wasm, without the name and producers sections (size).
glue() {
  wasm-bindgen --target web --no-typescript --remove-name-section --remove-producers-section \
    --out-dir pkg --out-name "$1" "$2"
}

# Each module is our crate as a cdylib (Cargo.toml builds it as an rlib). The relaxed-SIMD builds take the
# target feature for our crate alone (`cargo rustc -- ...`), so that they reuse the plain builds'
# dependencies; the `relaxed-simd` feature only names them. A plain and a relaxed build write the same
# cdylib path, so each rebuilds our crate (about 30 s) after the other, never a dependency.
relaxed=(--features relaxed-simd -- -C target-feature=+relaxed-simd)

# The main module, plain and relaxed.
core_module() {
  cargo rustc --quiet --release --lib --crate-type cdylib --target wasm32-unknown-unknown "$@"
}
core_module
glue wisp_core target/wasm32-unknown-unknown/release/wisp.wasm
core_module "${relaxed[@]}"
glue wisp_core_relaxed target/wasm32-unknown-unknown/release/wisp.wasm

# The threaded CPU module (wisp_core_mt*), for cross-origin isolated pages: the crate without WebGPU
# (wgpu 0.16 does not build with wasm atomics) and with rayon on Web Workers (`threads`). Atomics need the
# standard library rebuilt with them, hence the pinned nightly with rust-src (tools/setup.sh installs it)
# and its own target dir. The link arguments (for our crate only, so that the dependencies' builds stay
# cached) give the shared, imported memory and the TLS exports wasm-bindgen's thread support needs, up to
# 4 GiB like the main module. Built without reference types: wasm-bindgen's thread transform then needs no
# externref table. `threaded [--features relaxed-simd] -- [crate flags]`.
threaded() {
  RUSTFLAGS="-C target-feature=+atomics,+bulk-memory,+mutable-globals,+simd128,-reference-types" \
    cargo "+$(cat tools/nightly-toolchain)" rustc --quiet --release --lib --crate-type cdylib \
    --target wasm32-unknown-unknown --no-default-features --features threads \
    -Z build-std=panic_abort,std --target-dir target/threads "$@" \
    -C link-arg=--shared-memory -C link-arg=--import-memory -C link-arg=--max-memory=4294967296 \
    -C link-arg=--export=__wasm_init_tls -C link-arg=--export=__tls_size -C link-arg=--export=__tls_align \
    -C link-arg=--export=__tls_base
}
threaded --
glue wisp_core_mt target/threads/wasm32-unknown-unknown/release/wisp.wasm
threaded "${relaxed[@]}"
glue wisp_core_mt_relaxed target/threads/wasm32-unknown-unknown/release/wisp.wasm
cp pkg-templates/*.* LICENSE-MIT LICENSE-APACHE pkg/
# The models that ship inside the package: wisp-mini whole, wisp-agent without its 98 MB base.
mkdir -p pkg/models/wisp-mini pkg/models/wisp-agent
cp pkg-templates/models/* pkg/models/
cp models/wisp-mini/{manifest.json,model.safetensors,config.json,tokenizer.json,chat_template.jinja} pkg/models/wisp-mini/
cp models/wisp-agent/{manifest.json,adapter.gguf,chat_template.jinja} pkg/models/wisp-agent/
# The package's code, for service workers that precache it (www/sw.js): snippet paths change every build.
# Without the models' data (models/*/): the loader keeps those in its own cache once a page loads them.
node -e 'const fs = require("fs"); const files = fs.readdirSync("pkg", { recursive: true }).filter((f) => fs.statSync(`pkg/${f}`).isFile() && f !== "files.json" && !/^models\/[^/]+\//.test(f)).sort(); fs.writeFileSync("pkg/files.json", JSON.stringify(files, null, 1) + "\n")'
for wasm in wisp_core_bg.wasm wisp_core_relaxed_bg.wasm wisp_core_mt_bg.wasm wisp_core_mt_relaxed_bg.wasm; do
  echo "pkg/: ${wasm} $(stat -c %s "pkg/${wasm}") bytes, $(gzip -9 -c "pkg/${wasm}" | wc -c) gzipped"
done
mkdir -p target
echo "$inputs" >"$stamp"
