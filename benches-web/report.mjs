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

export function table(r, jsonName) {
  const out = [];
  out.push(`# Wisp vs onnxruntime-web, ${r.started.slice(0, 16).replace("T", " ")} UTC`, "");
  out.push(`${r.browser.version}${r.browser.headed ? " (headed)" : " (headless)"}; adapter: ${[r.environment.adapter?.vendor, r.environment.adapter?.architecture, r.environment.adapter?.description].filter(Boolean).join(" / ") || "none"}; ` +
    `${r.machine.cpus} CPUs (${r.machine.cpuModel}), load average ${r.machine.loadavgStart.map((x) => x.toFixed(1)).join(" ")} at start, ${r.machine.loadavgEnd.map((x) => x.toFixed(1)).join(" ")} at end. ` +
    `Package: wisp_core_bg.wasm ${r.package.wasmBytes.toLocaleString("en")} bytes, ${r.package.wasmGzipBytes.toLocaleString("en")} gzipped. Raw data: \`${jsonName}\`.`, "");
  out.push("Median [min–max] over the timed repetitions, after one warm-up run except where marked cold (no warm-up: for ort-webgpu that includes shader compilation). TTFT and prefill at the first prompt length come from the same runs as decode.", "");
  for (const [name, m] of Object.entries(r.models)) {
    const prompts = [...new Set(Object.values(m.engines).flatMap((e) => Object.keys(e.runs)))].map(Number).sort((a, b) => a - b);
    out.push(`## ${m.label}`, "");
    out.push(`| engine | load ms | ${prompts.map((p) => `TTFT ms (${p})`).join(" | ")} | ${prompts.map((p) => `prefill tok/s (${p})`).join(" | ")} | decode tok/s | greedy = Wisp |`);
    out.push(`|---|---|${prompts.map(() => "---|").join("")}${prompts.map(() => "---|").join("")}---|---|`);
    for (const [engine, e] of Object.entries(m.engines)) {
      const decodeRun = Object.values(e.runs).find((x) => x?.decodeTokPerSec);
      const checks = Object.entries(e.check ?? {});
      const check = engine === "wisp" ? "(reference)" : checks.length ? checks.map(([p, c]) => `${c.identical ? "yes" : "**NO**"} (${p}: ${c.compared} tok)`).join(", ") : "–";
      const label = engine + (engine === "ort-wasm" && e.info?.numThreads != null ? `, ${e.info.numThreads} thread${e.info.numThreads === 1 ? "" : "s"}` : "");
      if (e.error) {
        out.push(`| ${label} | failed: ${e.error.slice(0, 120).replace(/\|/g, "/").replace(/\n/g, " ")} |${prompts.map(() => " |").join("")}${prompts.map(() => " |").join("")} | |`);
        continue;
      }
      out.push(`| ${label} | ${cell(e.load, 0)} | ${prompts.map((p) => runCell(e.runs[p], "ttftMs", 0)).join(" | ")} | ${prompts.map((p) => runCell(e.runs[p], "prefillTokPerSec", 1)).join(" | ")} | ` +
        `${decodeRun ? `${cell(decodeRun.decodeTokPerSec, 2)}${decodeRun.warmup === false ? " cold" : ""} (${decodeRun.newTokens - 1} tok)` : "–"} | ${check} |`);
    }
    out.push("");
    const w = m.engines.wisp;
    const ratios = [];
    for (const peer of ["ort-webgpu", "ort-wasm"]) {
      const e = m.engines[peer];
      if (!w || !e || w.error || e.error) continue;
      const wd = Object.values(w.runs).find((x) => x?.decodeTokPerSec), pd = Object.values(e.runs).find((x) => x?.decodeTokPerSec);
      const p0 = prompts.find((p) => w.runs[p]?.ttftMs && e.runs[p]?.ttftMs);
      const parts = [];
      if (wd && pd) parts.push(`decode ${f(mid(wd.decodeTokPerSec) / mid(pd.decodeTokPerSec), 3)}×`);
      if (p0) parts.push(`TTFT(${p0}) ${f(mid(w.runs[p0].ttftMs) / mid(e.runs[p0].ttftMs), 2)}× as long`);
      if (w.load && e.load) parts.push(`load ${f(mid(w.load) / mid(e.load), 2)}× as long`);
      if (parts.length) ratios.push(`- Wisp / ${peer}: ${parts.join(", ")}`);
    }
    if (ratios.length) out.push("Ratios (Wisp over peer, medians of this run; decode > 1 means Wisp is faster):", "", ...ratios, "");
    const bw = r.bandwidth;
    const lim = (bps) => f(bps / m.weightBytesF32, 1);
    out.push(`Bandwidth limit: ${f(m.weightBytesF32 / 1e6, 1)} MB of f32 weights read per decode token; page memcpy ${f(bw.cpuBytesPerSec.median / GB, 2)} GB/s → ≤ ${lim(bw.cpuBytesPerSec.median)} tok/s` +
      (bw.gpuBytesPerSec ? `; WebGPU copyBufferToBuffer ${f(bw.gpuBytesPerSec.median / GB, 2)} GB/s → ≤ ${lim(bw.gpuBytesPerSec.median)} tok/s` : "") + ". (memcpy counts bytes copied, each read once and written once; decode only reads weights, so a read-only stream can beat this figure by up to ~2×.)", "");
  }
  return out.join("\n") + "\n";
}

const COLORS = { wisp: "#d9480f", "ort-webgpu": "#1971c2", "ort-wasm": "#2f9e44" };

/** Two log-scale bar panels: decode tok/s and TTFT at the first prompt length, per model and engine. */
export function chart(r) {
  const panels = [
    ["decode tokens/s (higher is better)", (e) => mid(Object.values(e.runs).find((x) => x?.decodeTokPerSec)?.decodeTokPerSec)],
    ["TTFT ms, first prompt length (lower is better)", (e) => mid(Object.values(e.runs).find((x) => x?.ttftMs)?.ttftMs)],
  ];
  const models = Object.entries(r.models);
  const engines = Object.keys(COLORS);
  const bar = 26, gap = 14, left = 170, width = 420, top = 40; // the right margin holds the value labels
  const rows = models.length * (engines.length * bar + gap);
  const panelH = rows + 50;
  const svg = [];
  svg.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${left + width + 190}" height="${top + panels.length * panelH}" font-family="sans-serif" font-size="12">`);
  svg.push(`<rect width="100%" height="100%" fill="white"/>`);
  svg.push(`<text x="10" y="22" font-size="15" font-weight="bold">Wisp vs onnxruntime-web, ${r.started.slice(0, 10)} (${r.environment.adapter?.architecture || r.environment.adapter?.vendor || "no adapter"}, log scale)</text>`);
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
          const cold = Object.values(m.engines[e].runs).find((x) => x?.ttftMs)?.warmup === false ? " (cold, n=1)" : "";
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
