// Runs one of this folder's programs (built for wasm32-wasip1) in Node's WASI, with the file system at /.
//     node run.mjs target/wasm32-wasip1/release/rten.wasm MODEL.onnx LAYERS KV_HEADS HEAD_DIM PROMPT DECODE REPS
import { readFileSync } from "node:fs";
import { WASI } from "node:wasi";

const [wasm, ...args] = process.argv.slice(2);
const wasi = new WASI({ version: "preview1", args: [wasm, ...args], preopens: { "/": "/" } });
const instance = await WebAssembly.instantiate(await WebAssembly.compile(readFileSync(wasm)), wasi.getImportObject());
wasi.start(instance);
