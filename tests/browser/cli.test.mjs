// `npm run ask`: the package runs headlessly in Node (CPU backend) with wisp-agent (the default; the set-up
// fetches its base) or the fallback wisp-mini, and the demo tools, and prints the transcript: the call with
// its arguments, the tool's result, the answer that states it, and the speed.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { test } from "node:test";
import { promisify } from "node:util";

const runs = [
  { args: [], model: "models/wisp-agent/manifest.json" },
  { args: ["--model", "models/wisp-mini/manifest.json"], model: "models/wisp-mini/manifest.json" },
];

for (const { args, model } of runs) {
  test(`ask ${args.join(" ") || "(the default model)"} prints ${model}'s tool call, its outcome, and the speed`, async (t) => {
    const script = new URL("../../tools/ask.mjs", import.meta.url).pathname;
    const { stdout } = await promisify(execFile)("node", [script, ...args, "What's the weather in Paris?"], { timeout: 120_000 });
    t.diagnostic(stdout.replaceAll("\n", " | "));
    const lines = stdout.trim().split("\n");
    assert.match(lines[0], new RegExp(`^model: ${model.replaceAll(/[./]/g, "\\$&")} \\(loaded in [\\d.]+ s\\)$`));
    assert.equal(lines[1], "user: What's the weather in Paris?");
    const call = lines.find((l) => l.startsWith("tool call: "));
    assert.ok(call, stdout);
    const [, name, callArgs] = call.match(/^tool call: (\w+)\((.*)\)$/);
    assert.equal(name, "get_weather");
    assert.deepEqual(JSON.parse(callArgs), { city: "Paris" });
    assert.ok(lines.some((l) => l.startsWith('tool result: {"city":"Paris","temperature_c":18,"condition":"sunny"}')), stdout);
    assert.ok(lines.some((l) => l.startsWith("assistant: ") && l.includes("18") && l.includes("sunny")), stdout);
    assert.match(lines.at(-1), /^done \(\w+\) in \d step\(s\): \d+ prompt tokens \(\d+ reused\), \d+ generated in [\d.]+ s, [\d.]+ tokens\/s/);
  });
}
