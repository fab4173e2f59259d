import { mkdtempSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type DialectName, freshSaver } from "../helpers/databases.js";
import { runCli, writeSyntheticFile } from "./support.js";

/**
 * 100k checkpoints (4 threads of 25k, each with a blob and a pending write) imported
 * from a file and exported again by the CLI in a process whose JavaScript heap is
 * capped far below the file's size: if the data were held in memory, the process would
 * die. Its peak resident memory is reported. Heavy (a minute or more per database), so
 * it runs only with TRANSFER_HEAVY=1; TRANSFER_HEAVY_DIALECTS picks the databases.
 */
const heavy = process.env.TRANSFER_HEAVY === "1";
const dialects = (process.env.TRANSFER_HEAVY_DIALECTS ?? "sqlite,postgres,mysql").split(",") as DialectName[];
const MB = 1024 * 1024;
/** Old-generation heap of the child: well below the file (a tighter cap only makes the GC work harder). */
const HEAP_MB = 96;

/** Runs the CLI with a capped heap, sampling its peak resident memory (VmHWM). */
async function measured(args: string[]) {
  const started = Date.now();
  const run = runCli(args, undefined, [`--max-old-space-size=${HEAP_MB}`]);
  let peakKb = 0;
  const timer = setInterval(() => {
    try {
      const status = readFileSync(`/proc/${run.child.pid}/status`, "utf8");
      peakKb = Math.max(peakKb, Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0));
    } catch {
      // the process has ended
    }
  }, 50);
  const result = await run;
  clearInterval(timer);
  return { ...result, peakRssMb: Math.round(peakKb / 1024), seconds: (Date.now() - started) / 1000 };
}

describe.runIf(heavy).each(dialects)("100k checkpoints through %s", (dialect) => {
  it("import and export with bounded memory", { timeout: 30 * 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "lgcd-heavy-"));
    const file = join(dir, "100k.jsonl");
    await writeSyntheticFile(file, { threads: 4, checkpoints: 25_000, prefix: "heavy", payload: 200 });
    const fileMb = Math.round(statSync(file).size / MB);
    const { saver, url } = await freshSaver(dialect);
    try {
      const imported = await measured(["import", "--url", url, "--file", file, "--json", "--no-progress"]);
      expect(imported.stderr).toBe("");
      expect(JSON.parse(imported.stdout)).toMatchObject({ imported: 4, checkpoints: 100_000, failed: [] });
      const out = join(dir, "out.jsonl");
      const exported = await measured(["export", "--url", url, "--out", out, "--json", "--no-progress"]);
      expect(exported.stderr).toBe("");
      expect(JSON.parse(exported.stdout)).toMatchObject({ threads: 4, checkpoints: 100_000, failed: [] });
      expect(statSync(out).size).toBe(statSync(file).size);
      const report = { dialect, fileMb, heapCapMb: HEAP_MB, import: imported, export: exported };
      console.log(
        JSON.stringify({
          ...report,
          import: { peakRssMb: imported.peakRssMb, seconds: imported.seconds },
          export: { peakRssMb: exported.peakRssMb, seconds: exported.seconds },
        }),
      );
    } finally {
      await saver.close();
    }
  });
});
