// Issue 31, finding 5: an import killed between its rename and the refresh of the
// thread's row left a thread that `list` shows but searchThreads, countThreads, pin and
// the sweeper never see; a second import reported "unchanged" without repairing it. The
// kill point is reproduced by deleting the thread's row after an import.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { importThreads } from "../../src/index.js";
import { DIALECTS } from "../helpers/databases.js";
import { openRaw } from "../lifecycle/support.js";
import { freshTargets, writeSyntheticFile } from "./support.js";

const dir = mkdtempSync(join(tmpdir(), "lgcd-thread-row-"));
const target = freshTargets();

describe.each(DIALECTS)("a thread row lost after an import's rename on %s", (dialect) => {
  it("is repaired by the next import of the thread, which reports it unchanged", async () => {
    const { saver, url } = await target(dialect);
    const file = join(dir, `row-${dialect}.jsonl`);
    await writeSyntheticFile(file, { threads: 2, checkpoints: 4, prefix: `row-${dialect}` });
    expect(await importThreads(url, { file })).toMatchObject({ imported: 2, failed: [] });

    const raw = await openRaw(dialect, url);
    try {
      await raw.query("delete from checkpoint_threads where thread_id = ?", [`row-${dialect}-0`]);
    } finally {
      await raw.close();
    }
    expect(await saver.countThreads()).toBe(1);

    expect(await importThreads(url, { file })).toMatchObject({ imported: 0, unchanged: 2, failed: [] });
    expect(await saver.countThreads()).toBe(2);
    const found = await saver.searchThreads({ sortBy: "threadId", order: "asc" });
    expect(found.map((t) => [t.threadId, t.checkpoints])).toEqual([
      [`row-${dialect}-0`, 4],
      [`row-${dialect}-1`, 4],
    ]);
    await saver.pinThread(`row-${dialect}-0`);
    expect((await saver.sweep({ idleFor: "1s", strategy: "delete" })).deleted).toBe(1);
    expect((await saver.searchThreads()).map((t) => t.threadId)).toEqual([`row-${dialect}-0`]);
  });
});
