/**
 * The upgrade that drops the checkpoints' (thread_id, created_at) index
 * (drop_thread_created_at_index), from the previous release's schema holding data:
 * every checkpoint is kept and read back the same, the index is gone, and retention,
 * which now finds idle threads on the per-thread table, expires exactly the idle ones.
 */
import { rmSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { Dialect } from "../../src/dialects/dialect.js";
import { DrizzleSaver } from "../../src/index.js";
import { migrate } from "../../src/savers/migrations/migrate.js";
import { DIALECTS, type DialectName, freshDatabaseUrl } from "../helpers/databases.js";
import {
  CLEAN,
  dumpTables,
  HistoryWriter,
  hoursAgo,
  integrity,
  newThreadId,
  openRaw,
  type RawDatabase,
  setCreatedAt,
  storedThreads,
} from "../lifecycle/support.js";
import { releasedBefore } from "./earlier-rows.js";

const MIGRATION = "drop_thread_created_at_index";
const INDEX = "checkpoints_thread_created_at_idx";

/** Whether the checkpoints table has an index of that name. */
async function hasIndex(raw: RawDatabase, dialect: DialectName, name: string): Promise<boolean> {
  const query = {
    postgres: "select indexname from pg_indexes where tablename = 'checkpoints' and indexname = ?",
    mysql:
      "select index_name from information_schema.statistics where table_schema = database() and table_name = 'checkpoints' and index_name = ?",
    sqlite: "select name from sqlite_master where type = 'index' and tbl_name = 'checkpoints' and name = ?",
  }[dialect];
  return (await raw.query(query, [name])).length > 0;
}

describe.each(DIALECTS)("upgrade dropping the checkpoints' (thread_id, created_at) index on %s", (dialect) => {
  it("keeps every checkpoint, drops the index, and expires exactly the idle threads", async () => {
    const url = await freshDatabaseUrl(dialect);
    const { folder, count, pending } = releasedBefore(dialect === "postgres" ? "pg" : dialect, MIGRATION);
    const saver = await DrizzleSaver.fromUrl(url);
    const raw = await openRaw(dialect, url);
    try {
      const internals = saver as unknown as { dialect: Dialect };
      const options = { migrationsFolder: folder, migrationsTable: "langgraph_checkpoint_migrations" };
      expect(await migrate(internals.dialect, options)).toHaveLength(count);
      expect(await hasIndex(raw, dialect, INDEX)).toBe(true);

      // Data of the previous release: threads with forks and a subgraph, two of them idle.
      const threads = [newThreadId("upg-idle"), newThreadId("upg-idle"), newThreadId("upg-active")];
      for (const threadId of threads) {
        const writer = new HistoryWriter(saver, threadId);
        const ids = await writer.chain(3);
        await writer.put({ parent: ids[0], values: { step: "fork" } });
        await writer.chain(2, { ns: "child:1" });
      }
      const idle = threads.slice(0, 2);
      await setCreatedAt(raw, idle, hoursAgo(dialect, 240));
      const before = await dumpTables(raw, threads);

      expect((await saver.setup()).map((m) => m.tag)).toEqual(pending);
      expect(await hasIndex(raw, dialect, INDEX)).toBe(false);
      expect((await saver.migrationStatus()).pending).toEqual([]);
      expect(await dumpTables(raw, threads)).toEqual(before);

      expect(await saver.expireThreads({ idleSince: new Date(Date.now() - 120 * 3_600_000) })).toBe(2);
      expect(await storedThreads(raw)).toEqual([threads[2]]);
      expect(await integrity(raw)).toEqual(CLEAN);
      expect(await saver.getTuple({ configurable: { thread_id: threads[2], checkpoint_ns: "" } })).toBeDefined();
      expect(await saver.setup()).toEqual([]);
    } finally {
      await raw.close();
      await saver.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
