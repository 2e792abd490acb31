// The one error catalogue, checked across the places that spell it: the core's codes (`WispError::code`
// in src/error.rs), the codes the package's JavaScript raises, `ERROR_CODES` (pkg-templates/errors.js),
// the `WispErrorCode` type (pkg-templates/index.d.ts), and the tables of docs/errors.md and the npm
// README. A code missing from any of them, or listed where nothing raises it, fails.
import assert from "node:assert/strict";
import { readFile, readdir } from "node:fs/promises";
import { test } from "node:test";
import { ERROR_CODES } from "../../pkg-templates/errors.js";

const root = new URL("../../", import.meta.url);
const read = (path) => readFile(new URL(path, root), "utf8");
const sorted = (codes) => [...new Set(codes)].sort();

/** The codes `WispError::code` returns: the string arms of its match. */
async function rustCodes() {
  const source = await read("src/error.rs");
  const body = source.match(/pub fn code\(&self\) -> &'static str \{([\s\S]*?)\n    \}/);
  assert.ok(body, "src/error.rs has no `pub fn code(&self) -> &'static str`");
  return [...body[1].matchAll(/=>\s*"([A-Z0-9_]+)"/g)].map((m) => m[1]);
}

/** Codes the package's JavaScript raises: `new WispError("X"`, `code: "X"`, and other code literals. */
async function javascriptCodes() {
  const codes = [];
  for (const name of await readdir(new URL("pkg-templates/", root))) {
    if (!name.endsWith(".js")) continue;
    // errors.js raises codes too (a trap's WASM_CRASHED), beside the list this test checks.
    const source = (await read(`pkg-templates/${name}`)).replace(/export const ERROR_CODES = [^;]*;/, "");
    for (const pattern of [/new WispError\(\s*"([A-Z0-9_]+)"/g, /code: "([A-Z0-9_]+)"/g, /"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)"/g]) {
      for (const m of source.matchAll(pattern)) codes.push(m[1]);
    }
  }
  return codes;
}

async function typeCodes() {
  const source = await read("pkg-templates/index.d.ts");
  const union = source.match(/export type WispErrorCode =([^;]*);/);
  assert.ok(union, "index.d.ts has no `export type WispErrorCode`");
  return [...union[1].matchAll(/"([A-Z0-9_]+)"/g)].map((m) => m[1]);
}

/** The first cell of each row of the table under the "## Error codes" heading (or the whole file). */
async function tableCodes(path) {
  const text = await read(path);
  const at = text.search(/^#+ Error codes/m);
  assert.ok(at >= 0, `${path} has no "Error codes" heading`);
  const section = text.slice(at).split(/\n(?=#{1,2} )/)[0];
  return [...section.matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map((m) => m[1]);
}

function assertSameSet(got, want, what) {
  const missing = want.filter((c) => !got.includes(c));
  const extra = got.filter((c) => !want.includes(c));
  assert.deepEqual({ missing, extra }, { missing: [], extra: [] }, `${what}: missing ${missing.join(", ") || "none"}, extra ${extra.join(", ") || "none"}`);
}

test("ERROR_CODES is the core's codes plus those the JavaScript raises, each once", async () => {
  assert.equal(new Set(ERROR_CODES).size, ERROR_CODES.length, "ERROR_CODES lists a code twice");
  const rust = await rustCodes();
  assert.ok(rust.length >= 20, `only ${rust.length} codes read from src/error.rs`);
  assert.equal(new Set(rust).size, rust.length, "two WispError variants share a code");
  assertSameSet(sorted(ERROR_CODES), sorted([...rust, ...(await javascriptCodes())]), "ERROR_CODES against src/error.rs and pkg-templates/*.js");
});

test("index.d.ts's WispErrorCode is ERROR_CODES", async () => {
  const types = await typeCodes();
  assert.equal(new Set(types).size, types.length, "WispErrorCode lists a code twice");
  assertSameSet(sorted(types), sorted(ERROR_CODES), "index.d.ts WispErrorCode");
});

for (const path of ["docs/errors.md", "pkg-templates/README.md"]) {
  test(`${path} documents every code once`, async () => {
    const rows = await tableCodes(path);
    assert.equal(new Set(rows).size, rows.length, `${path} has a code twice`);
    assertSameSet(sorted(rows), sorted(ERROR_CODES), path);
  });
}
