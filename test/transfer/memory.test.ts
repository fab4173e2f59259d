import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { exportThreads, importThreads } from "../../src/index.js";
import { type DialectName, freshSaver } from "../helpers/databases.js";
import { writeSyntheticFile } from "./support.js";

/**
 * 100k checkpoints (4 threads of 25k, each with a blob and a pending write) imported
 * from a file and exported again, with the heap sampled all along: memory must not
 * grow with the data. Heavy (about a minute per database), so it runs only with
 * TRANSFER_HEAVY=1; TRANSFER_HEAVY_DIALECTS picks the databases (default sqlite).
 */
const heavy = process.env.TRANSFER_HEAVY === "1";
const dialects = (process.env.TRANSFER_HEAVY_DIALECTS ?? "sqlite").split(",") as DialectName[];
const MB = 1024 * 1024;

async function peakHeap<T>(work: () => Promise<T>): Promise<{ result: T; peakMb: number; baseMb: number }> {
  globalThis.gc?.();
  const base = process.memoryUsage().heapUsed;
  let peak = base;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().heapUsed);
  }, 20);
  try {
    const result = await work();
    return { result, peakMb: Math.round(peak / MB), baseMb: Math.round(base / MB) };
  } finally {
    clearInterval(timer);
  }
}

describe.runIf(heavy).each(dialects)("100k checkpoints through %s", (dialect) => {
  it("import and export with bounded memory", { timeout: 30 * 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "lgcd-heavy-"));
    const file = join(dir, "100k.jsonl");
    await writeSyntheticFile(file, { threads: 4, checkpoints: 25_000, prefix: "heavy", payload: 200 });
    const fileMb = Math.round(statSync(file).size / MB);
    const { saver, url } = await freshSaver(dialect);
    try {
      const started = Date.now();
      const imported = await peakHeap(() => importThreads(url, { file }));
      const importSeconds = (Date.now() - started) / 1000;
      expect(imported.result).toMatchObject({ imported: 4, checkpoints: 100_000, failed: [] });
      const exportStarted = Date.now();
      const exported = await peakHeap(() => exportThreads({ url }, join(dir, "out.jsonl")));
      const exportSeconds = (Date.now() - exportStarted) / 1000;
      expect(exported.result).toMatchObject({ threads: 4, checkpoints: 100_000, failed: [] });
      const report = {
        dialect,
        fileMb,
        import: { baseHeapMb: imported.baseMb, peakHeapMb: imported.peakMb, seconds: importSeconds },
        export: { baseHeapMb: exported.baseMb, peakHeapMb: exported.peakMb, seconds: exportSeconds },
      };
      console.log(JSON.stringify(report));
      // The file is far larger than this: the data never sits in memory whole.
      expect(imported.peakMb - imported.baseMb).toBeLessThan(Math.min(150, fileMb / 2));
      expect(exported.peakMb - exported.baseMb).toBeLessThan(Math.min(150, fileMb / 2));
    } finally {
      await saver.close();
    }
  });
});
