// The models that ship in the package (pkg-templates/models/): wisp-agent's base as the code names it
// (WISP_AGENT_BASE, for error messages and docs) is the one its manifest pins, and each source names
// every file its manifest lists.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test } from "node:test";
import { WISP_AGENT_BASE, wispAgent } from "../../pkg-templates/models/wisp-agent.js";
import { wispMini } from "../../pkg-templates/models/wisp-mini.js";

const manifest = async (name) => JSON.parse(await readFile(new URL(`../../models/${name}/manifest.json`, import.meta.url), "utf8"));
const paths = (m) => [m.files.weights, m.files.tokenizer, m.files.config, m.files.chat_template, ...(m.files.adapters ?? [])].filter(Boolean).map((f) => f.path).sort();

test("wisp-agent: WISP_AGENT_BASE is the manifest's base, and wispAgent names every file", async () => {
  const m = await manifest("wisp-agent");
  assert.deepEqual(WISP_AGENT_BASE, { name: m.files.weights.path, sha256: m.files.weights.sha256, size: m.files.weights.size });
  assert.deepEqual(Object.keys(wispAgent({ base: "x.gguf" }).files).sort(), paths(m));
  assert.throws(() => wispAgent({}), { code: "INVALID_REQUEST" });
});

test("wisp-mini: the source names every file of its manifest", async () => {
  assert.deepEqual(Object.keys(wispMini.files).sort(), paths(await manifest("wisp-mini")));
});
