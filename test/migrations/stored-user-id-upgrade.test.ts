/**
 * MySQL's 0006_stored_thread_user_id from the release before it, holding data: the
 * thread table's `meta_user_id` becomes STORED with its index rebuilt, every row's value
 * is computed by the upgrade, and the user_id thread search finds the same threads
 * through the index as by reading the rows.
 */
import { rmSync } from "node:fs";
import { type CheckpointMetadata, uuid6 } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import type { Dialect } from "../../src/dialects/dialect.js";
import { DrizzleSaver } from "../../src/index.js";
import { migrate } from "../../src/savers/migrations/migrate.js";
import { freshDatabaseUrl } from "../helpers/databases.js";
import { openRaw } from "../helpers/raw.js";
import { releasedUpTo } from "./earlier-rows.js";

const OPTIONS = { migrationsTable: "langgraph_checkpoint_migrations" };
const INDEX = "checkpoint_threads_meta_user_id_idx";

/** Thread id -> the user_id of its newest root checkpoint (what meta_user_id must hold). */
const THREADS: [string, unknown][] = [
  ["a", "u1"],
  ["b", "u2"],
  ["c", "u1"],
  ["d", 7], // not a string: no column value
  ["e", "x".repeat(256)], // longer than the column: no column value
  ["f", undefined],
];

describe("upgrade making the thread table's user_id column stored on mysql", () => {
  it("computes every row's value, rebuilds the index and keeps the search exact", async () => {
    const url = await freshDatabaseUrl("mysql");
    const released = releasedUpTo("mysql", 6);
    const saver = await DrizzleSaver.fromUrl(url);
    const raw = await openRaw("mysql", url);
    try {
      const dialect = (saver as unknown as { dialect: Dialect }).dialect;
      expect(await migrate(dialect, { ...OPTIONS, migrationsFolder: released })).toHaveLength(6);
      const kind = async () => {
        const [row] = await raw.query(
          "select extra from information_schema.columns where table_schema = database() and table_name = 'checkpoint_threads' and column_name = 'meta_user_id'",
        );
        return String(row.extra).toUpperCase();
      };
      expect(await kind()).toMatch(/VIRTUAL/);
      for (const [thread, user] of THREADS) {
        // An older checkpoint of another user first: the row must follow the newest one.
        for (const metadata of [{ user_id: "old" }, user === undefined ? {} : { user_id: user }]) {
          await saver.put(
            { configurable: { thread_id: thread, checkpoint_ns: "" } },
            { v: 4, id: uuid6(-1), ts: "", channel_values: {}, channel_versions: {}, versions_seen: {} },
            { source: "loop", step: 0, parents: {}, ...metadata } as CheckpointMetadata,
            {},
          );
        }
      }

      expect((await saver.setup()).map((m) => m.tag)).toEqual([
        "0006_stored_thread_user_id",
        "0007_drop_thread_created_at_index",
      ]);
      expect(await kind()).toMatch(/STORED|PERSISTENT/);
      const indexed = await raw.query(
        "select column_name from information_schema.statistics where table_schema = database() and table_name = 'checkpoint_threads' and index_name = ? order by seq_in_index",
        [INDEX],
      );
      expect(indexed.map((row) => String(row.column_name))).toEqual(["meta_user_id", "updated_at"]);
      const stored = await raw.query("select thread_id, meta_user_id from checkpoint_threads order by thread_id");
      expect(stored.map((row) => [String(row.thread_id), row.meta_user_id])).toEqual(
        THREADS.map(([thread, user]) => [thread, typeof user === "string" && user.length <= 255 ? user : null]),
      );

      for (const user of ["u1", "u2", "old"]) {
        const want = THREADS.filter(([, u]) => u === user).map(([thread]) => thread);
        for (const hint of ["force", "ignore"]) {
          const found = await raw.query(
            `select thread_id from checkpoint_threads ${hint} index (${INDEX}) where meta_user_id = ? order by thread_id`,
            [user],
          );
          expect(
            found.map((row) => String(row.thread_id)),
            `${hint} index, ${user}`,
          ).toEqual(want);
        }
        for (const order of ["asc", "desc"] as const) {
          const threads = await saver.searchThreads({ filter: { user_id: user }, sortBy: "threadId", order });
          const ids = threads.map((t) => t.threadId);
          expect(ids).toEqual(order === "asc" ? want : [...want].reverse());
        }
      }
      // Puts after the upgrade keep the stored column current.
      await saver.put(
        { configurable: { thread_id: "f", checkpoint_ns: "" } },
        { v: 4, id: uuid6(-1), ts: "", channel_values: {}, channel_versions: {}, versions_seen: {} },
        { source: "loop", step: 1, parents: {}, user_id: "u2" } as CheckpointMetadata,
        {},
      );
      const u2 = await saver.searchThreads({ filter: { user_id: "u2" }, sortBy: "threadId", order: "desc" });
      expect(u2.map((t) => t.threadId)).toEqual(["f", "b"]);
      expect(await saver.setup()).toEqual([]);
    } finally {
      await raw.close();
      await saver.close();
      rmSync(released, { recursive: true, force: true });
    }
  });
});
