// The package in Node (no browser): `init` finds its wasm on disk by default, or takes a file path or the
// bytes, and models load from file paths; each variant in a fresh Node process (init runs once per realm).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, test } from "node:test";
import { promisify } from "node:util";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

// Runs `body` as an ES module in Node from the repository root; resolves to what it printed as JSON.
async function inNode(body) {
  const script = `
    import { readFile } from "node:fs/promises";
    const wisp = await import("./pkg/index.js");
    const out = await (async () => { ${body} })();
    console.log(JSON.stringify(out));`;
  const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script], { cwd: ROOT });
  return JSON.parse(stdout.trim().split("\n").at(-1));
}

const RUN = `
  const model = await wisp.Model.load({ bundle: "models/wisp-mini/manifest.json" }, { backend: "cpu" });
  const tokens = (await model.generate("Hello", { maxTokens: 3 })).tokens.length;
  const backend = model.backend.kind;
  model.close();
  return { tokens, backend };`;

describe("Node", () => {
  test("the default init reads the package's wasm from disk; a bundle loads from a file path", async () => {
    assert.deepEqual(await inNode(RUN), { tokens: 3, backend: "cpu" });
  });

  test("init takes a file path relative to the working directory", async () => {
    assert.equal((await inNode(`await wisp.init({ wasmUrl: "pkg/wisp_core_bg.wasm" }); ${RUN}`)).tokens, 3);
  });

  test("init takes the module's bytes", async () => {
    assert.equal((await inNode(`await wisp.init({ wasm: await readFile("pkg/wisp_core_bg.wasm") }); ${RUN}`)).tokens, 3);
  });

  test("a wrong path is a coded error that names it", async () => {
    const r = await inNode(`
      try { await wisp.init({ wasmUrl: "pkg/missing.wasm" }); return "resolved"; }
      catch (e) { return { code: e.code, message: e.message }; }`);
    assert.equal(r.code, "WASM_LOAD");
    assert.match(r.message, /missing\.wasm/);
  });
});
