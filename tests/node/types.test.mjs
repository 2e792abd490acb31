// index.d.ts against typed examples of every API (tests/types/: page mode, worker mode, the OpenAI
// surface, the AI SDK provider), compiled with `tsc --strict`: the types must accept what the runtime does and give back what it
// returns (the other suites check the values themselves).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { promisify } from "node:util";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

async function tsc(project) {
  const bin = fileURLToPath(new URL("node_modules/.bin/tsc", `file://${ROOT}`));
  const run = await promisify(execFile)(bin, ["-p", project], { cwd: ROOT }).catch((e) => e);
  assert.equal(run.code ?? 0, 0, `${run.stdout}${run.stderr}`);
}

test("tsc --strict accepts the typed examples", () => tsc("tests/types"));

// ai's own declarations need Node's types and @types/json-schema (which the project does not install): its
// example compiles with Node's types and without checking the libraries' declarations.
test("tsc --strict accepts the AI SDK example against ai's own types", () => tsc("tests/types/tsconfig.ai-sdk.json"));
