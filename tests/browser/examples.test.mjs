// Every JS example of the user docs (README.md, pkg-templates/README.md, docs/*.md) runs as written against
// the built package and the bundled model: on a page of headless Chromium, whose import map resolves
// "wisp-agent" as a bundler would (to pkg/), or in Node where the block is marked Node code. A marker on the
// line before a block says how it runs:
//   <!-- example: node -->              Node code, run from the repository root (files there resolve);
//   <!-- example: continues -->         a fragment, run joined to the blocks before it in the same file;
//   <!-- example: no-run (why) -->      not run, with the reason (counted, and the reason is required).
// An unmarked block is page code, and fails the test unless it runs to the end without an error. An
// example that logs `undefined` (a field that does not exist, say `usage.tokens`) or calls console.error
// fails too.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, readdir, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import { build } from "vite";
import { browserFor } from "./harness.mjs";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const MARKER = /^<!--\s*example:\s*(no-run|continues|node)\b\s*(.*?)\s*-->$/;

// What is wrong with the markdown itself (markers, fences), for the first test to report.
const problems = [];

/** The JS blocks of one markdown file: `{ file, line, code, marker, reason }`. */
function extractExamples(file, text) {
  const lines = text.split("\n");
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    // A misspelt marker must not turn a block into page code silently.
    if (/^<!--\s*example\b/.test(lines[i].trim()) && !MARKER.test(lines[i].trim())) problems.push(`${file}:${i + 1}: an unknown example marker`);
    if (!/^```(js|javascript|mjs)\s*$/.test(lines[i])) continue;
    let prev = i - 1;
    while (prev >= 0 && lines[prev].trim() === "") prev--;
    const m = prev >= 0 ? MARKER.exec(lines[prev].trim()) : null;
    const end = lines.indexOf("```", i + 1);
    if (end < 0) {
      problems.push(`${file}:${i + 1}: an unclosed code block`);
      break;
    }
    blocks.push({ file, line: i + 1, code: lines.slice(i + 1, end).join("\n"), marker: m?.[1] ?? "page", reason: m?.[2] ?? "" });
    i = end;
  }
  return blocks;
}

/** The examples to run: continued fragments joined to what they continue, no-run blocks (and what continues them) left out. */
function runnable(blocks) {
  const out = [];
  let last = null;
  for (const b of blocks) {
    if (b.marker === "continues") {
      if (last?.file !== b.file) {
        problems.push(`${b.file}:${b.line}: "continues" with no block before it`);
        continue;
      }
      if (last.marker === "no-run") continue;
      last = { ...last, line: b.line, code: `${last.code}\n${b.code}`, joined: [...(last.joined ?? [last.line]), b.line] };
    } else {
      last = b;
    }
    if (last.marker !== "no-run") out.push(last);
  }
  return out;
}

const files = ["README.md", "pkg-templates/README.md", ...(await readdir(join(ROOT, "docs"))).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];
const blocks = (await Promise.all(files.map(async (f) => extractExamples(f, await readFile(join(ROOT, f), "utf8"))))).flat();
const examples = runnable(blocks);

// Served under /__deps/: the `ai` package (the Vercel AI SDK, with its own dependencies) bundled into one
// module, as an app's bundler would.
const IMPORT_MAP = JSON.stringify({
  imports: {
    "wisp-agent": "/pkg/index.js",
    "wisp-agent/threads": "/pkg/threads.js",
    "wisp-agent/ai-sdk": "/pkg/ai-sdk.js",
    "wisp-agent/models/wisp-agent": "/pkg/models/wisp-agent.js",
    "wisp-agent/models/wisp-mini": "/pkg/models/wisp-mini.js",
    openai: "/node_modules/openai/index.mjs",
    ai: "/__deps/ai.js",
  },
});

// Run before a Node example: what the page's check does, with a line on stderr for each misuse (and the
// exit status set).
const CHECK_LOGS = `data:text/javascript,${encodeURIComponent(`
  for (const level of ["log", "info", "warn", "error"]) {
    const log = console[level];
    console[level] = (...args) => {
      if (level === "error" || args.includes(undefined)) {
        process.stderr.write("MISUSE " + level + ": " + args.map(String).join(" ") + "\\n");
        process.exitCode = 1;
      }
      log.apply(console, args);
    };
  }`)}`;

describe("docs examples", () => {
  test("markers are known, fences closed, and no-run markers say why", (t) => {
    const noRun = blocks.filter((b) => b.marker === "no-run");
    for (const b of noRun) if (!/^\(.+\)$/.test(b.reason)) problems.push(`${b.file}:${b.line}: no-run needs a reason in parentheses`);
    assert.deepEqual(problems, []);
    t.diagnostic(`${blocks.length} JS blocks in ${files.length} files: ${examples.length} runs (${examples.filter((e) => e.marker === "node").length} in Node, ${examples.filter((e) => e.joined).length} joined), ${noRun.length} no-run`);
    assert.ok(examples.length >= 10, "the docs' examples were found");
  });

  describe("on a page", () => {
    const browser = browserFor({});
    let deps;
    before(async () => {
      deps = await mkdtemp(join(tmpdir(), "wisp-examples-deps-"));
      await build({
        configFile: false,
        logLevel: "warn",
        build: { outDir: deps, minify: false, lib: { entry: fileURLToPath(import.meta.resolve("ai")), formats: ["es"], fileName: () => "ai.js" } },
      });
      await browser.context.route(`${browser.url}/__deps/**`, async (route) => {
        const name = new URL(route.request().url()).pathname.slice("/__deps/".length);
        route.fulfill({ contentType: "text/javascript", body: await readFile(join(deps, name)) });
      });
    });
    after(async () => {
      if (deps) await rm(deps, { recursive: true, force: true });
    });
    let n = 0;
    for (const ex of examples.filter((e) => e.marker !== "node")) {
      const id = n++;
      test(`${ex.file}:${ex.line}${ex.joined ? ` (blocks at ${ex.joined.join(", ")})` : ""}`, { timeout: 180_000 }, async (t) => {
        const page = await browser.context.newPage();
        const logs = [];
        page.on("console", (m) => logs.push(`${m.type()}: ${m.text()}`.slice(0, 300)));
        page.on("pageerror", (e) => logs.push(`pageerror: ${e.message}`));
        const base = `${browser.url}/tests/browser/__example-${id}`;
        await page.route(`${base}.html`, (route) =>
          route.fulfill({
            contentType: "text/html",
            body: `<!doctype html><meta charset="utf-8"><title>example</title>
<script type="importmap">${IMPORT_MAP}</script>
<script type="module">
window.unhandled = [];
window.misuse = [];
for (const level of ["log", "info", "warn", "error"]) {
  const log = console[level];
  console[level] = (...args) => {
    if (level === "error") window.misuse.push(\`console.error: \${args.join(" ")}\`);
    if (args.includes(undefined)) window.misuse.push(\`undefined logged: \${args.map(String).join(" ")}\`);
    log.apply(console, args);
  };
}
addEventListener("unhandledrejection", (e) => window.unhandled.push(String(e.reason?.message ?? e.reason)));
window.done = import("./__example-${id}.mjs").then(() => "ran", (e) => \`\${e?.code ?? e?.name}: \${e?.message ?? e}\`);
</script>`,
          }),
        );
        await page.route(`${base}.mjs`, (route) => route.fulfill({ contentType: "text/javascript", body: ex.code }));
        try {
          await page.goto(`${base}.html`);
          await page.waitForFunction(() => window.done, null, { timeout: 170_000 });
          const outcome = await page.evaluate(() => window.done);
          const { unhandled, misuse } = await page.evaluate(() => ({ unhandled: window.unhandled, misuse: window.misuse }));
          for (const l of logs) t.diagnostic(l);
          assert.equal(outcome, "ran");
          assert.deepEqual(unhandled, []);
          assert.deepEqual(misuse, []);
          assert.deepEqual(logs.filter((l) => l.startsWith("pageerror")), []);
        } finally {
          await page.close();
        }
      });
    }
  });

  describe("in Node", () => {
    let dir;
    before(async () => {
      // As `npm install wisp-agent` would leave it, next to the example's file.
      dir = await mkdtemp(join(tmpdir(), "wisp-examples-"));
      await mkdir(join(dir, "node_modules"));
      await symlink(join(ROOT, "pkg"), join(dir, "node_modules/wisp-agent"));
    });
    after(async () => {
      if (dir) await rm(dir, { recursive: true, force: true });
    });
    let n = 0;
    for (const ex of examples.filter((e) => e.marker === "node")) {
      const id = n++;
      test(`${ex.file}:${ex.line}`, { timeout: 180_000 }, async (t) => {
        const file = join(dir, `example-${id}.mjs`);
        await writeFile(file, ex.code);
        const { stdout, stderr } = await promisify(execFile)(process.execPath, ["--import", CHECK_LOGS, file], { cwd: ROOT, timeout: 170_000 });
        for (const l of `${stdout}${stderr}`.trim().split("\n")) t.diagnostic(l.slice(0, 300));
        assert.doesNotMatch(stderr, /^MISUSE /m);
      });
    }
  });
});
