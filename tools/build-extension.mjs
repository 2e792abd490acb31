// Assembles the example MV3 extension (www/extension/) into a folder Chromium loads unpacked: the
// extension's own files and a copy of the built package (pkg/, so run `npm run build` first) with the
// model it runs, wisp-mini, but without wisp-agent's adapter.
//   node tools/build-extension.mjs [out]      default: target/wisp-extension (git-ignored)
import { cp, rm, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));

/** Writes the extension into `out` (replacing it) and resolves to its absolute path. */
export async function buildExtension(out = join(ROOT, "target", "wisp-extension")) {
  out = resolve(out);
  await stat(join(ROOT, "pkg", "wisp_core_bg.wasm")).catch(() => {
    throw new Error("pkg/ is not built: run `npm run build` first");
  });
  await rm(out, { recursive: true, force: true });
  await cp(join(ROOT, "www", "extension"), out, { recursive: true });
  const unused = join(ROOT, "pkg", "models", "wisp-agent");
  await cp(join(ROOT, "pkg"), join(out, "pkg"), { recursive: true, filter: (path) => path !== unused && !path.startsWith(`${unused}/`) });
  return out;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out = await buildExtension(process.argv[2]);
  console.log(`Extension in ${out}: open chrome://extensions, turn on Developer mode, "Load unpacked", pick that folder.`);
}
