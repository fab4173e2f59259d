/**
 * The package as users run it: the built dist/ (`npm run build`, which every bench script
 * runs first), not the TypeScript sources. Loaded through tsx, the sources carry its
 * transform (every named closure wrapped to keep its name), which cost the saver several
 * percent on the hot path; the official savers are measured as shipped, so ours are too.
 */
import { readdirSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type * as Sources from "../src/index.js";

const distEntry = new URL("../dist/index.js", import.meta.url);
const sourceDir = fileURLToPath(new URL("../src/", import.meta.url));

/** The newest modification time among the files under `dir`. */
function newestMtime(dir: string): number {
  let newest = 0;
  for (const name of readdirSync(dir, { recursive: true, encoding: "utf8" })) {
    const stat = statSync(`${dir}/${name}`);
    if (stat.isFile()) newest = Math.max(newest, stat.mtimeMs);
  }
  return newest;
}

function builtMtime(): number {
  try {
    return statSync(distEntry).mtimeMs;
  } catch {
    throw new Error("bench: dist/ is missing; run `npm run build` (the npm bench scripts do)");
  }
}

if (builtMtime() < newestMtime(sourceDir)) {
  throw new Error("bench: dist/ is older than src/; run `npm run build` (the npm bench scripts do)");
}

/** The built package's exports, typed as the sources they are built from. */
export const shipped = (await import(distEntry.href)) as typeof Sources;
