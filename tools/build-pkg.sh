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
cp pkg-templates/* pkg/
# The package's files, for service workers that precache it (www/sw.js): snippet paths change every build.
node -e 'const fs = require("fs"); const files = fs.readdirSync("pkg", { recursive: true }).filter((f) => fs.statSync(`pkg/${f}`).isFile() && f !== "files.json").sort(); fs.writeFileSync("pkg/files.json", JSON.stringify(files, null, 1) + "\n")'
raw=$(stat -c %s pkg/wisp_core_bg.wasm)
gz=$(gzip -9 -c pkg/wisp_core_bg.wasm | wc -c)
echo "pkg/: wisp_core_bg.wasm ${raw} bytes, ${gz} gzipped"
