// Assembles the example MV3 extension (www/extension/) into a folder Chromium loads unpacked: the
// extension's own files, a copy of the built package (pkg/, so run `npm run build` first) and of the
// bundled model (only the files its manifest names).
//   node tools/build-extension.mjs [out]      default: target/wisp-extension (git-ignored)
import { cp, mkdir, readFile, rm, stat } from "node:fs/promises";
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
  await cp(join(ROOT, "pkg"), join(out, "pkg"), { recursive: true });
  const model = join(ROOT, "models", "wisp-mini");
  const manifest = JSON.parse(await readFile(join(model, "manifest.json"), "utf8"));
  await mkdir(join(out, "models", "wisp-mini"), { recursive: true });
  for (const file of ["manifest.json", ...Object.values(manifest.files).map((f) => f.path)]) {
    await cp(join(model, file), join(out, "models", "wisp-mini", file));
  }
  return out;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out = await buildExtension(process.argv[2]);
  console.log(`Extension in ${out}: open chrome://extensions, turn on Developer mode, "Load unpacked", pick that folder.`);
}
