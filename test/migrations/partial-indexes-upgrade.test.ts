/**
 * The SQLite upgrade that makes the `meta_source` and `meta_run_id` indexes of the
 * checkpoints and the `meta_user_id` index of the threads partial
 * (0004_partial_metadata_indexes), from the previous release's schema holding data:
 * every checkpoint is kept, filters on source and run id and the thread search by user
 * id still find the same rows, and the indexes hold entries only for the rows a filter
 * can use them for (a "loop" step, a checkpoint without a run id, a thread without a
 * user id add none).
 */
import { rmSync } from "node:fs";
import { type Checkpoint, type CheckpointMetadata, uuid6 } from "@langchain/langgraph-checkpoint";
import Database from "better-sqlite3";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { describe, expect, it } from "vitest";
import type { Dialect } from "../../src/dialects/dialect.js";
import { DrizzleSaver } from "../../src/index.js";
import { migrate } from "../../src/savers/migrations/migrate.js";
import { freshDatabaseUrl } from "../helpers/databases.js";
import { releasedBefore } from "./earlier-rows.js";

const MIGRATION = "0004_partial_metadata_indexes";

/** Entries in an index's B-tree (its leaf cells), read from SQLite's dbstat table. */
function indexEntries(db: Database.Database, index: string): number {
  const row = db
    .prepare("select coalesce(sum(ncell), 0) as n from dbstat where name = ? and pagetype = 'leaf'")
    .get(index);
  return Number((row as { n: number }).n);
}

/** A thread's checkpoints, one per metadata given, each the parent of the next. */
async function writeThread(saver: DrizzleSaver, threadId: string, metadatas: CheckpointMetadata[]): Promise<string[]> {
  const ids: string[] = [];
  let config = { configurable: { thread_id: threadId, checkpoint_ns: "" } };
  for (const [step, metadata] of metadatas.entries()) {
    const checkpoint: Checkpoint = {
      v: 4,
      id: uuid6(-1),
      ts: new Date().toISOString(),
      channel_values: { count: step },
      channel_versions: { count: step + 1 },
      versions_seen: {},
    };
    config = (await saver.put(config, checkpoint, metadata, { count: step + 1 })) as typeof config;
    ids.push(checkpoint.id);
  }
  return ids;
}

async function listIds(saver: DrizzleSaver, filter: Record<string, unknown>): Promise<string[]> {
  const ids: string[] = [];
  for await (const tuple of saver.list({}, { filter })) ids.push(tuple.checkpoint.id);
  return ids.sort();
}

describe("upgrade to partial metadata indexes on SQLite", () => {
  it("keeps every checkpoint, finds the same rows, and indexes only the rows filters use the indexes for", async () => {
    const file = await freshDatabaseUrl("sqlite");
    const { folder, count } = releasedBefore("sqlite", MIGRATION);
    const db = new Database(file);
    const saver = new DrizzleSaver(drizzle(db));
    try {
      const dialect = (saver as unknown as { dialect: Dialect }).dialect;
      const options = { migrationsFolder: folder, migrationsTable: "langgraph_checkpoint_migrations" };
      expect(await migrate(dialect, options)).toHaveLength(count);
      const loop = (step: number, extra: Record<string, unknown> = {}) =>
        ({ source: "loop", step, parents: {}, ...extra }) as CheckpointMetadata;
      const withRun = await writeThread(saver, "with-run", [
        { source: "input", step: -1, parents: {}, run_id: "run-1", user_id: "alice" } as CheckpointMetadata,
        loop(0, { run_id: "run-1", user_id: "alice" }),
        loop(1, { run_id: "run-1", user_id: "alice" }),
        { source: "update", step: 2, parents: {}, user_id: "alice" } as CheckpointMetadata,
      ]);
      const plain = await writeThread(saver, "plain", [loop(0), loop(1), loop(2)]);
      // Before: every checkpoint has an entry in both indexes.
      expect(indexEntries(db, "checkpoints_meta_source_idx")).toBe(7);
      expect(indexEntries(db, "checkpoints_meta_run_id_idx")).toBe(7);
      expect(indexEntries(db, "checkpoint_threads_meta_user_id_idx")).toBe(2);

      expect((await saver.setup()).map((m) => m.tag)).toEqual([MIGRATION, "0005_drop_thread_created_at_index"]);
      expect((await saver.migrationStatus()).pending).toEqual([]);
      // The rebuilt indexes hold the "input" and "update" checkpoints, and the three with a run id.
      expect(indexEntries(db, "checkpoints_meta_source_idx")).toBe(2);
      expect(indexEntries(db, "checkpoints_meta_run_id_idx")).toBe(3);
      expect(indexEntries(db, "checkpoint_threads_meta_user_id_idx")).toBe(1);

      expect(await listIds(saver, { source: "update" })).toEqual([withRun[3]]);
      expect(await listIds(saver, { source: "input" })).toEqual([withRun[0]]);
      expect(await listIds(saver, { source: "loop" })).toEqual([withRun[1], withRun[2], ...plain].sort());
      expect(await listIds(saver, { run_id: "run-1" })).toEqual(withRun.slice(0, 3).sort());
      const alices = await saver.searchThreads({ filter: { user_id: "alice" } });
      expect(alices.map((thread) => thread.threadId)).toEqual(["with-run"]);

      // Later writes keep to the same rule: a loop step without a run id adds no entry.
      await writeThread(saver, "later", [
        loop(0),
        loop(1, { run_id: "run-2" }),
        { source: "fork", step: 2, parents: {} },
      ]);
      expect(indexEntries(db, "checkpoints_meta_source_idx")).toBe(3);
      expect(indexEntries(db, "checkpoints_meta_run_id_idx")).toBe(4);
      expect(indexEntries(db, "checkpoint_threads_meta_user_id_idx")).toBe(1);

      await saver.deleteForRuns(["run-1"]);
      expect(await listIds(saver, { run_id: "run-1" })).toEqual([]);
      expect((await saver.getTuple({ configurable: { thread_id: "plain" } }))?.checkpoint.id).toBe(plain[2]);
    } finally {
      await saver.close();
      db.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
