// Markdown table and SVG chart of one run's JSON (run.mjs). Also: node benches-web/report.mjs results/X.json
import { readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";

const f = (x, d = 1) => (x == null ? "–" : x >= 100 ? x.toFixed(0) : x.toFixed(d));
// The median of an even count is the mean of the middle two (run.mjs before 2026-12-02 21:45 took the upper one).
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b), m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const mid = (s) => (s?.all ? median(s.all) : s?.median);
const cell = (s, d) => (s ? `${f(mid(s), d)} [${f(s.min, d)}–${f(s.max, d)}]${s.n > 1 ? "" : " (n=1)"}` : "–");
const GB = 1e9;

function runCell(run, key, d) {
  if (!run) return "–";
  if (run.mismatch) return "**MISMATCH**";
  if (run.skipped) return "skipped";
  return cell(run[key], d) + (run.warmup === false && run[key] ? " cold" : "");
}

const MB = (b) => (b == null ? "–" : (b / 2 ** 20).toFixed(1));
const decodeOf = (e) => Object.values(e.runs ?? {}).find((x) => x?.decodeTokPerSec);
const ttftAt = (e, p) => e?.runs?.[p]?.ttftMs;

// What an engine's plan override cut, in words (run.mjs PLANS overrides).
function cuts(c) {
  if (!c) return "";
  const out = [];
  if (c.options?.contextLen) out.push(`context ${c.options.contextLen}`);
  if (c.prompts) out.push(`prompts ${c.prompts.join("/")}`);
  if (c.firstPromptOnly) out.push("decode prompt only");
  if (c.loadReps) out.push(`${c.loadReps} load${c.loadReps > 1 ? "s" : ""}`);
  if (c.decode) out.push(`${c.decode} new tokens`);
  if (c.reps) out.push(`${c.reps} timed run${c.reps > 1 ? "s" : ""}`);
  if (c.warmup === false) out.push("no warm-up");
  if (c.agent === false) out.push("no agent task");
  return out.join(", ");
}

const threads = (n) => `${n} thread${n === 1 ? "" : "s"}`;

function label(engine, e) {
  if (engine.startsWith("ort-wasm") && e.info?.numThreads != null) return `ort-wasm, ${threads(e.info.numThreads)}`;
  if (engine.startsWith("wisp-cpu") && e.info?.backend?.threads != null) {
    return `wisp-cpu${engine === "wisp-cpu-lookup" ? " + prompt-lookup drafts (draftTokens: 7)" : ""}, ${threads(e.info.backend.threads)}`;
  }
  if (engine === "native-webgpu") return `native wonnx (${e.info?.adapter || "Vulkan"})`;
  if (engine === "native-cpu") return "native CPU kernels, 1 thread";
  if (engine.startsWith("native-llama.cpp")) {
    return `native llama.cpp (${e.info?.engine ?? "llama-cpp-python"}), ${threads(e.info?.threads ?? 1)}${e.info?.peakRssBytes ? `, peak RSS ${MB(e.info.peakRssBytes)} MiB` : ""}`;
  }
  if (engine.startsWith("wllama") && e.info?.threads != null) return `wllama 3.13.0 (llama.cpp in wasm), ${threads(e.info.threads)}`;
  if (engine === "wisp-cpu-lookup") return "wisp-cpu + prompt-lookup drafts (draftTokens: 7)";
  return engine;
}

function ratio(m, a, b, prompts) {
  const ea = m.engines[a], eb = m.engines[b];
  if (!ea || !eb || ea.error || eb.error) return null;
  const parts = [];
  const da = decodeOf(ea), db = decodeOf(eb);
  if (da && db) parts.push(`decode ${f(mid(da.decodeTokPerSec) / mid(db.decodeTokPerSec), 3)}×`);
  const p0 = prompts.find((p) => ttftAt(ea, p) && ttftAt(eb, p));
  if (p0) parts.push(`TTFT(${p0}) ${f(mid(ttftAt(ea, p0)) / mid(ttftAt(eb, p0)), 3)}× as long`);
  const pl = [...prompts].reverse().find((p) => p !== p0 && ttftAt(ea, p) && ttftAt(eb, p));
  if (pl) parts.push(`TTFT(${pl}) ${f(mid(ttftAt(ea, pl)) / mid(ttftAt(eb, pl)), 3)}×`);
  if (ea.load && eb.load) parts.push(`load ${f(mid(ea.load) / mid(eb.load), 2)}×`);
  return parts.length ? `- ${a} / ${b}: ${parts.join(", ")}` : null;
}

export function table(r, jsonName) {
  const out = [];
  const pk = r.package;
  out.push(`# Wisp vs its peers, ${r.started.slice(0, 16).replace("T", " ")} UTC`, "");
  out.push(`${r.browser.version}${r.browser.headed ? " (headed)" : " (headless)"}; adapter: ${[r.environment.adapter?.vendor, r.environment.adapter?.architecture, r.environment.adapter?.description].filter(Boolean).join(" / ") || "none"}; ` +
    `${r.machine.cpus} CPUs (${r.machine.cpuModel})${r.machine.shared ? ", shared with other jobs" : ""}, load average ${r.machine.loadavgStart.map((x) => x.toFixed(1)).join(" ")} at start, ${r.machine.loadavgEnd.map((x) => x.toFixed(1)).join(" ")} at end` +
    `${r.wallSeconds ? `; the whole run took ${(r.wallSeconds / 60).toFixed(1)} min` : ""}. Pages not cross-origin isolated (${r.environment.crossOriginIsolated ? "it was!" : "no SharedArrayBuffer"}), so ort-wasm runs one thread, as Wisp's CPU backend does, except the rows ending in -2t: their pages are served with COOP/COEP (cross-origin isolated), and both engines run 2 threads there. Raw data: \`${jsonName}\`.`, "");
  out.push(`Package: ${pk.wasmFile ?? "wisp_core_bg.wasm"} ${pk.wasmBytes.toLocaleString("en")} bytes, ${pk.wasmGzipBytes.toLocaleString("en")} gzipped` +
    (pk.pkgBytes ? `; all ${pk.pkgFiles} files of pkg/ ${pk.pkgBytes.toLocaleString("en")} bytes, ${pk.pkgGzipBytes.toLocaleString("en")} gzipped (each file gzip -9).` : "."), "");
  out.push("Median [min–max] over the timed repetitions, after one warm-up run except where marked cold (no warm-up: for the WebGPU engines that includes shader compilation). TTFT and prefill at the first prompt length come from the same runs as decode; a prompt whose median TTFT is under 300 ms gets prefill-only runs up to 15 timings in all. Greedy: every engine's first run must give wisp-cpu's tokens, or its cell is not timed (MISMATCH). Memory: the wasm heap is Wisp's `WebAssembly.Memory` after the engine's runs (it only grows, so this is its peak; one page per engine); GPU is the peak of live bytes in buffers the page created. Native rows: tools/native_bench.rs, one run after a warm-up (cold where marked), same prompt ids; native llama.cpp: benches-web/llama_cpp_bench.py, two runs after a warm-up, same prompt ids, its greedy tokens compared but timed either way. wllama takes text, so it gets Wisp's prompt ids decoded (its tokenizer may cut them into other ids) and is compared by text, timed either way; it generates exactly as many tokens as wisp-cpu did.", "");
  for (const [, m] of Object.entries(r.models)) {
    const prompts = [...new Set(Object.values(m.engines).flatMap((e) => Object.keys(e.runs ?? {})))].map(Number).sort((a, b) => a - b);
    out.push(`## ${m.label}`, "");
    out.push(`| engine | load ms | ${prompts.map((p) => `TTFT ms (${p})`).join(" | ")} | ${prompts.map((p) => `prefill tok/s (${p})`).join(" | ")} | decode tok/s | agent task ms | wasm heap MiB | GPU buffers MiB | greedy = wisp-cpu | cuts |`);
    out.push(`|---|---|${prompts.map(() => "---|").join("")}${prompts.map(() => "---|").join("")}---|---|---|---|---|---|`);
    for (const [engine, e] of Object.entries(m.engines)) {
      const decodeRun = decodeOf(e);
      const checks = Object.entries(e.check ?? {});
      const check = engine === (r.referenceEngine ?? "wisp-cpu") ? "(reference)" : checks.length ? checks.map(([p, c]) => `${c.identical ? "yes" : "**NO**"} (${p}: ${c.compared} tok)`).join(", ") : "–";
      if (e.error) {
        out.push(`| ${label(engine, e)} | failed: ${e.error.slice(0, 160).replace(/\|/g, "/").replace(/\n/g, " ")} |${prompts.map(() => " |").join("")}${prompts.map(() => " |").join("")} | | | | | |`);
        continue;
      }
      const reloaded = e.agentReloaded ? `, ${f(e.agentReloaded.ms, 0)} on a reloaded page` : "";
      const agent = e.agent ? `${f(e.agent.ms, 0)}${e.agent.againMs ? `, then ${f(e.agent.againMs, 0)} after reset()` : ""}${reloaded} (${e.agent.steps} step${e.agent.steps > 1 ? "s" : ""}${e.agent.toolCalls.length ? `, ${e.agent.toolCalls.map((c) => `${c.name ?? "?"} ${c.ok ? "ok" : "error"}`).join(", ")}` : ", no tool call"})` : "–";
      out.push(`| ${label(engine, e)} | ${cell(e.load, 0)} | ${prompts.map((p) => runCell(e.runs[p], "ttftMs", 0)).join(" | ")} | ${prompts.map((p) => runCell(e.runs[p], "prefillTokPerSec", 1)).join(" | ")} | ` +
        `${decodeRun ? `${cell(decodeRun.decodeTokPerSec, 2)}${decodeRun.warmup === false ? " cold" : ""} (${decodeRun.newTokens - 1} tok${decodeRun.acceptedDraftTokens ? `; ${decodeRun.passes} passes, ${decodeRun.acceptedDraftTokens} drafts kept` : ""})` : "–"} | ${agent} | ${MB(e.memory?.wasmHeapBytes)} | ${MB(e.memory?.gpuBufferPeakBytes || null)} | ${check} | ${cuts(e.cuts)} |`);
    }
    out.push("");
    const ratios = [["wisp-cpu", "native-llama.cpp"], ["wisp-cpu-2t", "native-llama.cpp-2t"], ["wisp-cpu", "wllama"], ["wisp-cpu-2t", "wllama-2t"], ["wisp-cpu", "ort-wasm"], ["wisp-cpu-2t", "ort-wasm-2t"], ["wisp-cpu-2t", "wisp-cpu"], ["ort-wasm-2t", "ort-wasm"], ["wisp-webgpu", "ort-webgpu"], ["wisp-webgpu", "ort-wasm"], ["wisp-cpu-lookup", "wisp-cpu"], ["wisp-cpu", "native-cpu"], ["wisp-webgpu", "native-webgpu"]]
      .map(([a, b]) => ratio(m, a, b, prompts)).filter(Boolean);
    if (ratios.length) out.push("Ratios (medians of this run; decode > 1 means the first is faster, TTFT > 1 that it is slower):", "", ...ratios, "");
    const agents = Object.entries(m.engines).filter(([, e]) => e.agent);
    if (agents.length) {
      const a = agents[0][1].agent;
      out.push(`Agent task: "${a.question}" through \`createAgent\` with the demo tools of www/tools.js, greedy, to the final answer; ` +
        `the chat template ${a.templateShowsTools ? "renders the tools" : "**ignores the tools** (it has no tools section), so the model never sees them"}. ` +
        agents.map(([engine, e]) => `${engine}: ${e.agent.steps} step(s), calls ${e.agent.toolCalls.map((c) => `${c.name}(${JSON.stringify(c.arguments ?? null)}) → ${c.ok ? "ok" : `error: ${c.result}`}`).join("; ") || "none"}, ${e.agent.usage.promptTokens} prompt + ${e.agent.usage.completionTokens} completion tokens (${e.agent.usage.forcedTokens ?? 0} forced)${e.agent.againProfile ? `, after reset() ${e.agent.againUsage.cachedTokens} prompt tokens from the cache and ${e.agent.againProfile.stages.embed?.calls ?? "?"} forward passes` : ""}${e.agentReloaded ? `, on a reloaded page (its prefix kept in the Cache API by the earlier visit: ${e.agentReloaded.prefixKept ? "kept" : "**not kept**"}) ${e.agentReloaded.usage.cachedTokens} prompt tokens restored or reused, ${e.agentReloaded.sameAnswer ? "the same answer" : "**another answer**"}` : ""}, finish ${e.agent.finishReason}, answer ${JSON.stringify(e.agent.text.slice(0, 80))}`).join("; ") + ".", "");
    }
    const bw = r.bandwidth;
    const lim = (bytes, bps) => f(bps / bytes, 1);
    const parts = m.weightBytesF32 ? [`f32 weights ${f(m.weightBytesF32 / 1e6, 1)} MB per token (ort-wasm, ort-webgpu, wisp-webgpu): page memcpy ${f(bw.cpuBytesPerSec.median / GB, 2)} GB/s → ≤ ${lim(m.weightBytesF32, bw.cpuBytesPerSec.median)} tok/s` +
      (bw.gpuBytesPerSec ? `; WebGPU copyBufferToBuffer ${f(bw.gpuBytesPerSec.median / GB, 2)} GB/s → ≤ ${lim(m.weightBytesF32, bw.gpuBytesPerSec.median)} tok/s` : "")] : [];
    if (m.ggufBytes) parts.push(`the GGUF file (what wllama and llama.cpp read per token, about) ${f(m.ggufBytes / 1e6, 1)} MB → ≤ ${lim(m.ggufBytes, bw.cpuBytesPerSec.median)} tok/s at page memcpy speed`);
    if (m.weightBytesPerPassCpu) {
      parts.push(`wisp-cpu reads ${f(m.weightBytesPerPassCpu / 1e6, 1)} MB per token in the format it keeps → ≤ ${lim(m.weightBytesPerPassCpu, bw.cpuBytesPerSec.median)} tok/s at page memcpy speed` +
        (m.nativeMemcpyBytesPerSec ? ` (native memcpy ${f(m.nativeMemcpyBytesPerSec / GB, 2)} GB/s → ≤ ${lim(m.weightBytesPerPassCpu, m.nativeMemcpyBytesPerSec)} tok/s)` : ""));
    }
    out.push(`Bandwidth limit: ${parts.join(". ")}. (memcpy counts bytes copied, each read once and written once; decode only reads weights, so a read-only stream can beat this figure by up to ~2×${m.weightBytesF32 < 64e6 ? "; and weights this small stay in the CPU's caches between tokens, which a 128 MiB copy does not measure" : ""}.)`, "");
    out.push(...profileTable(m));
  }
  return out.join("\n") + "\n";
}

/** Wisp's own per-stage profile (`model.profile()`) of one run at the decode prompt, per generated token. */
function profileTable(m) {
  const rows = Object.entries(m.engines).filter(([, e]) => e.profile?.stages);
  if (!rows.length) return [];
  const out = ["Where Wisp's time goes (`model.profile()` over one run at the decode prompt: its prefill and every decoded token; ms per generated token by stage, largest first):", ""];
  out.push("| engine | run | ms per token, all stages | 1st | 2nd | 3rd | the rest |", "|---|---|---|---|---|---|---|");
  for (const [engine, e] of rows) {
    const pr = e.profile;
    const stages = Object.entries(pr.stages).sort((a, b) => b[1].ms - a[1].ms);
    const total = stages.reduce((a, [, st]) => a + st.ms, 0);
    const per = (ms) => f(ms / pr.newTokens, 2);
    const top = (i) => (stages[i] ? `${stages[i][0]} ${per(stages[i][1].ms)} (${f((100 * stages[i][1].ms) / total, 0)}%)` : "–");
    out.push(`| ${label(engine, e)} | ${pr.promptTokens}-token prompt + ${pr.newTokens} tokens${pr.cold ? ", cold" : ""}; ${pr.tokensRun} tokens run | ${per(total)} | ${top(0)} | ${top(1)} | ${top(2)} | ${stages.slice(3).map(([k, st]) => `${k} ${per(st.ms)}`).join(", ") || "–"} |`);
  }
  out.push("");
  return out;
}

const COLORS = { "wisp-cpu": "#e8590c", "wisp-cpu-2t": "#d9480f", "wisp-cpu-lookup": "#f59f00", "wisp-webgpu": "#c2255c", "ort-wasm": "#2f9e44", "ort-wasm-2t": "#2b8a3e", "ort-webgpu": "#1971c2",
  wllama: "#7048e8", "wllama-2t": "#5f3dc4", "native-cpu": "#868e96", "native-webgpu": "#495057", "native-llama.cpp": "#343a40", "native-llama.cpp-2t": "#212529" };

/** Two log-scale bar panels: decode tok/s and TTFT at the first prompt length, per model and engine. */
export function chart(r) {
  const panels = [
    ["decode tokens/s (higher is better)", (e) => mid(Object.values(e.runs ?? {}).find((x) => x?.decodeTokPerSec)?.decodeTokPerSec)],
    ["TTFT ms, first prompt length (lower is better)", (e) => mid(Object.values(e.runs ?? {}).find((x) => x?.ttftMs)?.ttftMs)],
  ];
  const models = Object.entries(r.models);
  const engines = Object.keys(COLORS);
  const bar = 22, gap = 14, left = 170, width = 420, top = 40; // the right margin holds the value labels
  const rows = models.length * (engines.length * bar + gap);
  const panelH = rows + 50;
  const svg = [];
  svg.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${left + width + 190}" height="${top + panels.length * panelH}" font-family="sans-serif" font-size="12">`);
  svg.push(`<rect width="100%" height="100%" fill="white"/>`);
  svg.push(`<text x="10" y="22" font-size="15" font-weight="bold">Wisp vs its peers, ${r.started.slice(0, 10)} (${r.environment.adapter?.architecture || r.environment.adapter?.vendor || "no adapter"}, log scale)</text>`);
  panels.forEach(([title, pick], pi) => {
    const y0 = top + pi * panelH;
    const values = models.flatMap(([, m]) => engines.map((e) => m.engines[e] && pick(m.engines[e]))).filter((v) => v > 0);
    const lo = Math.floor(Math.log10(Math.min(...values))), hi = Math.ceil(Math.log10(Math.max(...values)));
    const x = (v) => left + ((Math.log10(v) - lo) / Math.max(1, hi - lo)) * width;
    svg.push(`<text x="10" y="${y0 + 14}" font-weight="bold">${title}</text>`);
    for (let d = lo; d <= hi; d++) {
      svg.push(`<line x1="${x(10 ** d)}" y1="${y0 + 22}" x2="${x(10 ** d)}" y2="${y0 + 22 + rows}" stroke="#ddd"/>`);
      svg.push(`<text x="${x(10 ** d)}" y="${y0 + 36 + rows}" text-anchor="middle" fill="#555">${10 ** d >= 1 ? (10 ** d).toLocaleString("en") : (10 ** d).toPrecision(1)}</text>`);
    }
    let y = y0 + 24;
    for (const [name, m] of models) {
      svg.push(`<text x="10" y="${y + (engines.length * bar) / 2}" font-weight="bold">${name}</text>`);
      for (const e of engines) {
        const v = m.engines[e] && pick(m.engines[e]);
        svg.push(`<text x="${left - 6}" y="${y + bar / 2 + 4}" text-anchor="end">${e}</text>`);
        if (v > 0) {
          svg.push(`<rect x="${left}" y="${y + 3}" width="${Math.max(1, x(v) - left)}" height="${bar - 6}" fill="${COLORS[e]}"/>`);
          const cold = Object.values(m.engines[e].runs ?? {}).find((x) => x?.ttftMs)?.warmup === false ? " (cold, n=1)" : "";
          svg.push(`<text x="${x(v) + 4}" y="${y + bar / 2 + 4}">${v >= 100 ? v.toFixed(0) : v.toPrecision(3)}${cold}</text>`);
        } else svg.push(`<text x="${left + 4}" y="${y + bar / 2 + 4}" fill="#999">n/a</text>`);
        y += bar;
      }
      y += gap;
    }
  });
  svg.push("</svg>");
  return svg.join("\n") + "\n";
}

if (process.argv[1]?.endsWith("report.mjs") && process.argv[2]) {
  const r = JSON.parse(readFileSync(process.argv[2], "utf8"));
  const dir = dirname(process.argv[2]);
  writeFileSync(join(dir, "latest.md"), table(r, basename(process.argv[2])));
  writeFileSync(join(dir, "latest.svg"), chart(r));
}
