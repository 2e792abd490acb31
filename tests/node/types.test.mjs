// index.d.ts against typed examples of every API (tests/types/: page mode, worker mode, the OpenAI
// surface), compiled with `tsc --strict`: the types must accept what the runtime does and give back what it
// returns (the other suites check the values themselves).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { promisify } from "node:util";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

for (const project of ["tests/types", "tests/types/tsconfig.ai-sdk.json"]) {
  test(`tsc --strict accepts the typed examples (${project})`, async () => {
    const tsc = fileURLToPath(new URL("node_modules/.bin/tsc", `file://${ROOT}`));
    const run = await promisify(execFile)(tsc, ["-p", project], { cwd: ROOT }).catch((e) => e);
    assert.equal(run.code ?? 0, 0, `${run.stdout}${run.stderr}`);
  });
}
