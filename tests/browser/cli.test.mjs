// `npm run ask`: the package runs headlessly in Node (CPU backend) with the bundled model and the demo
// tools, and prints the transcript. The bundled model is small, so the test checks the transcript's
// shape (a tool call with JSON arguments, its outcome, a final line), not the values.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { test } from "node:test";
import { promisify } from "node:util";

test("ask prints the tool call, its outcome, and the speed", async () => {
  const script = new URL("../../tools/ask.mjs", import.meta.url).pathname;
  const { stdout } = await promisify(execFile)("node", [script, "What's the weather in Paris?"], { timeout: 120_000 });
  const lines = stdout.trim().split("\n");
  assert.match(lines[0], /^model: models\/wisp-mini\/manifest\.json \(loaded in [\d.]+ s\)$/);
  assert.equal(lines[1], "user: What's the weather in Paris?");
  const call = lines.find((l) => l.startsWith("tool call: "));
  assert.ok(call, stdout);
  const [, name, args] = call.match(/^tool call: (\w+)\((.*)\)$/);
  assert.equal(name, "get_weather");
  assert.equal(typeof JSON.parse(args).city, "string");
  assert.ok(lines.some((l) => /^tool (result|error): /.test(l)), stdout);
  assert.match(lines.at(-1), /^done \(\w+\) in \d step\(s\): \d+ prompt tokens \(\d+ reused\), \d+ generated in [\d.]+ s, [\d.]+ tokens\/s/);
});
