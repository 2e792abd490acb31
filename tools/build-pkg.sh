#!/usr/bin/env bash
# Builds the npm package into pkg/: the release wasm, its wasm-bindgen glue, wasm-opt -Oz, and the
# hand-written files of pkg-templates/.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --quiet --release --lib --target wasm32-unknown-unknown
# wasm-opt runs before wasm-bindgen: Debian's binaryen (108) renumbers tables and exports the funcref table
# under wasm-bindgen's externref table name, which breaks the glue ("WebAssembly.Table.set(): Argument 1
# is invalid"). On the raw module there is no externref table yet. The features are those rustc's wasm32
# target enables by default; never --all-features (Chromium then refuses the module).
mkdir -p target/wasm-opt
wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
  --enable-mutable-globals --enable-reference-types --enable-multivalue \
  target/wasm32-unknown-unknown/release/wisp.wasm -o target/wasm-opt/wisp.wasm
rm -rf pkg
wasm-bindgen --target web --no-typescript --out-dir pkg --out-name wisp_core target/wasm-opt/wisp.wasm

# The threaded CPU module (wisp_core_mt*), for cross-origin isolated pages: the crate without WebGPU
# (wgpu 0.16 does not build with wasm atomics) and with rayon on Web Workers (`threads`). Atomics need the
# standard library rebuilt with them, hence the pinned nightly with rust-src (tools/setup.sh installs it)
# and its own target dir. The link arguments (`cargo rustc`: for our crate only, so that the dependencies'
# builds stay cached) give the shared, imported memory and the TLS exports wasm-bindgen's thread support
# needs, up to 4 GiB like the main module. Here wasm-opt must run after wasm-bindgen (the threads
# transform finds the stack pointer and TLS globals by their names, which wasm-opt strips; on the
# optimized module wasm-bindgen also fails with "failed to find `0` in function table"). So this module is
# built without reference types: wasm-bindgen then adds no externref table, the table Debian's binaryen
# 108 mislabels (it exports the funcref table as `__wbindgen_externrefs`).
RUSTFLAGS="-C target-feature=+atomics,+bulk-memory,+mutable-globals,+simd128,-reference-types" \
  cargo "+$(cat tools/nightly-toolchain)" rustc --quiet --release --lib --target wasm32-unknown-unknown \
  --no-default-features --features threads -Z build-std=panic_abort,std --target-dir target/threads -- \
  -C link-arg=--shared-memory -C link-arg=--import-memory -C link-arg=--max-memory=4294967296 \
  -C link-arg=--export=__wasm_init_tls -C link-arg=--export=__tls_size -C link-arg=--export=__tls_align \
  -C link-arg=--export=__tls_base
wasm-bindgen --target web --no-typescript --out-dir pkg --out-name wisp_core_mt \
  target/threads/wasm32-unknown-unknown/release/wisp.wasm
wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
  --enable-mutable-globals --enable-multivalue --enable-threads --enable-simd \
  pkg/wisp_core_mt_bg.wasm -o pkg/wisp_core_mt_bg.wasm
cp pkg-templates/* pkg/
# The package's files, for service workers that precache it (www/sw.js): snippet paths change every build.
node -e 'const fs = require("fs"); const files = fs.readdirSync("pkg", { recursive: true }).filter((f) => fs.statSync(`pkg/${f}`).isFile() && f !== "files.json").sort(); fs.writeFileSync("pkg/files.json", JSON.stringify(files, null, 1) + "\n")'
for wasm in wisp_core_bg.wasm wisp_core_mt_bg.wasm; do
  echo "pkg/: ${wasm} $(stat -c %s "pkg/${wasm}") bytes, $(gzip -9 -c "pkg/${wasm}" | wc -c) gzipped"
done
