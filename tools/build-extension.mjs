// Assembles the example MV3 extension (www/extension/) into a folder Chromium loads unpacked: the
// extension's own files, a copy of the built package (pkg/, so run `npm run build` first) with wisp-mini
// and wisp-agent's adapter, and wisp-agent's 98 MB base (models/, from tools/fetch-smollm2.sh) where it is
// here: the panel runs wisp-agent when the extension has its base, else wisp-mini, and says which.
//   node tools/build-extension.mjs [out]      default: target/wisp-extension (git-ignored)
import { cp, mkdir, rm, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { WISP_AGENT_BASE } from "../pkg-templates/models/wisp-agent.js";

const ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));
const BASE = WISP_AGENT_BASE.name;

/**
 * Writes the extension into `out` (replacing it) and resolves to its absolute path and whether it has
 * wisp-agent's base. `agent: false` leaves the base out even where it is here.
 */
export async function buildExtension(out = join(ROOT, "target", "wisp-extension"), { agent = true } = {}) {
  out = resolve(out);
  await stat(join(ROOT, "pkg", "wisp_core_bg.wasm")).catch(() => {
    throw new Error("pkg/ is not built: run `npm run build` first");
  });
  await rm(out, { recursive: true, force: true });
  await cp(join(ROOT, "www", "extension"), out, { recursive: true });
  await cp(join(ROOT, "pkg"), join(out, "pkg"), { recursive: true });
  const base = join(ROOT, "models", "smollm2", BASE);
  const withBase = agent && (await stat(base).then(() => true, () => false));
  if (withBase) {
    await mkdir(join(out, "models"));
    await cp(base, join(out, "models", BASE));
  }
  return { out, agent: withBase };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { out, agent } = await buildExtension(process.argv[2]);
  if (!agent) console.log(`No ${BASE} here (bash tools/fetch-smollm2.sh gets it): the extension runs wisp-mini, the tiny fallback.`);
  console.log(`Extension in ${out}: open chrome://extensions, turn on Developer mode, "Load unpacked", pick that folder.`);
}
