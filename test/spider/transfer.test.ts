import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { exportThreads, importThreads } from "../../src/index.js";
import { writeSyntheticFile } from "../transfer/support.js";
import { freshSpider, rowsPerShard, shardOf } from "./support.js";

/**
 * Import through a Spider head. An import stages a thread under another id, then moves
 * its rows into place; Spider cannot update the column its tables are partitioned by (an
 * update of `thread_id` failed every thread: "CONSTRAINT `checkpoints.channel_versions`
 * failed"), so the move is a copy and a delete, which lands each row on its thread's shard.
 */
it("imports threads onto their shards, again unchanged, and replaces one", async () => {
  const { saver, url, shards } = await freshSpider();
  const dir = mkdtempSync(join(tmpdir(), "lgcd-spider-transfer-"));
  const file = join(dir, "threads.jsonl");
  try {
    await writeSyntheticFile(file, { threads: 6, checkpoints: 3, prefix: "imported" });
    expect(await importThreads(url, { file })).toMatchObject({ imported: 6, failed: [] });
    for (let t = 0; t < 6; t++) {
      const threadId = `imported-${t}`;
      const perShard = await rowsPerShard(shards, "select count(*) as n from checkpoints where thread_id = ?", [
        threadId,
      ]);
      const counts = perShard.map((rows) => Number(rows[0].n));
      const home = await shardOf(url, threadId);
      expect(counts).toEqual(shards.map((_, shard) => (shard === home ? 3 : 0)));
      const tuple = await saver.getTuple({ configurable: { thread_id: threadId } });
      expect(tuple?.pendingWrites).toHaveLength(1);
    }
    // Nothing left under a staging id, on any shard.
    const staged = await rowsPerShard(shards, "select count(*) as n from checkpoint_writes where thread_id like ?", [
      "\\_\\_transfer\\_staging\\_\\_%",
    ]);
    expect(staged.map((rows) => Number(rows[0].n))).toEqual(shards.map(() => 0));
    expect(await importThreads(url, { file })).toMatchObject({ unchanged: 6, failed: [] });

    // A thread written since is replaced by the file's.
    const tuple = await saver.getTuple({ configurable: { thread_id: "imported-0" } });
    if (!tuple) throw new Error("imported-0 is missing");
    await saver.putWrites(tuple.config, [["messages", "written since"]], "later-task");
    const summary = await importThreads(url, { file, threadIds: ["imported-0"] }, { replace: true });
    expect(summary).toMatchObject({ replaced: 1, failed: [] });
    const back = join(dir, "back.jsonl");
    expect(await exportThreads({ url }, back)).toMatchObject({ threads: 6, failed: [] });
    expect((await saver.getTuple({ configurable: { thread_id: "imported-0" } }))?.pendingWrites).toHaveLength(1);
  } finally {
    await saver.close();
  }
});
