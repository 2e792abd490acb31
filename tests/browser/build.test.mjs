// `tools/build-pkg.sh --if-changed` (npm run demo, ask, build) keeps a pkg/ built from the same inputs
// instead of compiling the crate four times again, and the inputs' fingerprint (tools/pkg-inputs.sh)
// moves with what the build depends on. Runs after npm test's build, which leaves the fingerprint of its
// inputs in target/pkg-inputs.sha256.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { test } from "node:test";
import { promisify } from "node:util";

const root = new URL("../../", import.meta.url).pathname;
const run = (command, env = {}) =>
  promisify(execFile)("bash", command, { cwd: root, env: { ...process.env, ...env }, timeout: 60_000 });
const fingerprint = async (env) => (await run(["tools/pkg-inputs.sh"], env)).stdout.trim();

test("the inputs' fingerprint is stable and follows RUSTFLAGS", async () => {
  const first = await fingerprint();
  assert.match(first, /^[0-9a-f]{64}$/);
  assert.equal(await fingerprint(), first);
  assert.notEqual(await fingerprint({ RUSTFLAGS: "-C debug-assertions" }), first);
});

test("build-pkg.sh --if-changed keeps a current pkg/ as it is", async (t) => {
  const stamp = readFileSync(`${root}target/pkg-inputs.sha256`, "utf8").trim();
  if (stamp !== (await fingerprint())) {
    // A source changed since pkg/ was built: --if-changed would rebuild it, which is not this test's to do.
    t.skip("pkg/ was built from other inputs");
    return;
  }
  const before = statSync(`${root}pkg/files.json`).mtimeMs;
  const started = Date.now();
  const { stdout } = await run(["tools/build-pkg.sh", "--if-changed"]);
  assert.match(stdout, /^pkg\/: up to date/);
  assert.ok(Date.now() - started < 30_000);
  assert.equal(statSync(`${root}pkg/files.json`).mtimeMs, before);
});
