import { createHash, randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { type CheckpointMetadata, uuid6 } from "@langchain/langgraph-checkpoint";
import { drizzle as drizzleMysql } from "drizzle-orm/mysql2";
import { drizzle } from "drizzle-orm/postgres-js";
import mysql from "mysql2/promise";
import postgres from "postgres";
import { describe, expect, it } from "vitest";
import { DrizzleSaver } from "../../src/index.js";
import { migrate } from "../../src/savers/migrations/migrate.js";
import { resolve } from "../../src/wiring/registry.js";
import { freshDatabaseUrl } from "../helpers/databases.js";
import { copyMySqlRows, copyPgRows, releasedUpTo, seedMySqlDatabase } from "./earlier-rows.js";

/**
 * Released migrations are never edited; each later one is tested from the state the
 * previous release left, with data in it.
 */

describe("PostgreSQL upgrade from 0000_init", () => {
  it("0001 rebuilds the metadata index without a pending list and keeps every checkpoint", async () => {
    const url = await freshDatabaseUrl("postgres");
    const client = postgres(url, { onnotice: () => {} });
    const folder = releasedUpTo("pg", 1);
    try {
      // The state 0000_init left, with data written by the saver of that time.
      const options = { migrationsFolder: folder, migrationsTable: "langgraph_checkpoint_migrations" };
      expect(await migrate(resolve(drizzle(client), undefined).dialect, options)).toHaveLength(1);
      const writer = new DrizzleSaver(drizzle(client), { schema: "seed" });
      await writer.setup();
      let config = { configurable: { thread_id: "kept", checkpoint_ns: "" } };
      for (let step = 0; step < 20; step++) {
        const versions = { count: `${step + 1}` };
        config = (await writer.put(
          config,
          {
            v: 4,
            id: uuid6(-1),
            ts: "",
            channel_values: { count: step },
            channel_versions: versions,
            versions_seen: {},
          },
          { source: "loop", step, parents: {}, user: step % 2 === 0 ? "even" : "odd" } as CheckpointMetadata,
          versions,
        )) as never;
      }
      await copyPgRows(client, "seed");
      await client.unsafe("drop schema seed cascade");
      const saver = new DrizzleSaver(drizzle(client));
      expect((await saver.migrationStatus()).pending.map((m) => m.tag)).toEqual([
        "0001_metadata_index_without_pending_list",
        "0002_thread_table",
        "0003_incremental_values",
        "0004_store_items",
        "0005_drop_thread_created_at_index",
      ]);

      expect((await saver.setup()).map((m) => m.tag)).toEqual([
        "0001_metadata_index_without_pending_list",
        "0002_thread_table",
        "0003_incremental_values",
        "0004_store_items",
        "0005_drop_thread_created_at_index",
      ]);

      expect((await saver.migrationStatus()).pending).toEqual([]);
      const indexes = await client<{ relname: string; reloptions: string[] | null }[]>`
        select relname, reloptions from pg_class where relname like 'checkpoints%metadata_idx' order by relname`;
      expect(indexes).toHaveLength(9); // the partitioned index and one per partition
      for (const index of indexes) expect(index.reloptions).toEqual(["fastupdate=false"]);
      const latest = await saver.getTuple({ configurable: { thread_id: "kept" } });
      expect(latest?.checkpoint.channel_values).toEqual({ count: 19 });
      const odd = [];
      for await (const tuple of saver.list({}, { filter: { user: "odd" } })) odd.push(tuple.metadata?.step);
      expect(odd).toEqual([19, 17, 15, 13, 11, 9, 7, 5, 3, 1]);
    } finally {
      await client.end();
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

describe("MySQL upgrade from 0000_init", () => {
  it("0001 converts text to utf8mb4 or bytes and created_at to epoch milliseconds, keeping every row", async () => {
    const base = process.env.MYSQL_URL;
    if (!base) throw new Error("MYSQL_URL is not set");
    // A latin1 database: 0000 left channel and task_path in latin1 there.
    const name = `t_${randomBytes(6).toString("hex")}`;
    const admin = await mysql.createConnection(base);
    await admin.query(`create database ${name} character set latin1`);
    await admin.end();
    const url = new URL(base);
    url.pathname = `/${name}`;
    const pool = mysql.createPool({ uri: url.toString(), charset: "utf8mb4", supportBigNumbers: true });
    const folder = releasedUpTo("mysql", 1);
    try {
      const options = { migrationsFolder: folder, migrationsTable: "langgraph_checkpoint_migrations" };
      expect(await migrate(resolve(drizzleMysql(pool), undefined).dialect, options)).toHaveLength(1);
      const seed = await seedMySqlDatabase(base);
      const writer = new DrizzleSaver(drizzleMysql(seed.pool));
      await writer.setup();
      const put = async (ns: string, id: string) =>
        writer.put(
          { configurable: { thread_id: "kept", checkpoint_ns: ns } },
          { v: 4, id, ts: "", channel_values: { café: ns }, channel_versions: { café: "1" }, versions_seen: {} },
          { source: "loop", step: 0, parents: {} } as CheckpointMetadata,
          { café: "1" },
        );
      const spaced = await put("sub ", "c1");
      await put("sub", "c1");
      await writer.putWrites(spaced, [["branch:to:café", "go"]], "task", "~café");
      await copyMySqlRows(pool, seed.name, true);
      await seed.pool.end();
      const saver = new DrizzleSaver(drizzleMysql(pool));
      // A known instant, written in a session 5 hours ahead of UTC.
      const connection = await pool.getConnection();
      await connection.query("set time_zone = '+05:00'");
      await connection.query("update checkpoints set created_at = from_unixtime(1700000000.123) where ns_hash = ?", [
        createHash("sha256").update("sub ").digest(),
      ]);
      connection.release();

      expect((await saver.setup()).map((m) => m.tag)).toEqual([
        "0001_text_charsets_and_epoch_times",
        "0002_thread_table",
        "0003_incremental_values",
        "0004_metadata_index",
        "0005_store_items",
        "0006_stored_thread_user_id",
        "0007_drop_thread_created_at_index",
      ]);

      const tuple = await saver.getTuple(spaced);
      expect(tuple?.checkpoint.channel_values).toEqual({ café: "sub " });
      expect(tuple?.pendingWrites).toEqual([["task", "branch:to:café", "go"]]);
      const listed = [];
      for await (const item of saver.list({ configurable: { thread_id: "kept" } })) {
        listed.push(item.config.configurable?.checkpoint_ns);
      }
      expect(listed).toEqual(["sub ", "sub"]);
      const [row] = await pool.query<mysql.RowDataPacket[]>(
        "select created_at, task_path from checkpoint_writes join checkpoints using (thread_id, ns_hash, checkpoint_id) where ns_hash = ?",
        [createHash("sha256").update("sub ").digest()],
      );
      expect(Number(row[0].created_at)).toBe(1_700_000_000_123);
      expect(row[0].task_path).toBe("~café");
      // Text latin1 could not hold is now stored too.
      await saver.putWrites(spaced, [["branch:to:検索", "行く"]], "task-2", "~検索");
      expect((await saver.getTuple(spaced))?.pendingWrites).toContainEqual(["task-2", "branch:to:検索", "行く"]);
    } finally {
      await pool.end();
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

describe("MySQL upgrade from 0003_incremental_values", () => {
  it("0004 indexes the metadata of existing checkpoints, and triggers keep the index on later writes and deletes", async () => {
    const url = await freshDatabaseUrl("mysql");
    const pool = mysql.createPool({ uri: url, charset: "utf8mb4", supportBigNumbers: true });
    const folder = releasedUpTo("mysql", 4);
    try {
      const options = { migrationsFolder: folder, migrationsTable: "langgraph_checkpoint_migrations" };
      expect(await migrate(resolve(drizzleMysql(pool), undefined).dialect, options)).toHaveLength(4);
      const saver = new DrizzleSaver(drizzleMysql(pool));
      const put = async (thread: string, id: string, metadata: Record<string, unknown>) =>
        saver.put(
          { configurable: { thread_id: thread, checkpoint_ns: "" } },
          { v: 4, id, ts: "", channel_values: {}, channel_versions: {}, versions_seen: {} },
          { source: "loop", step: 0, parents: {}, ...metadata } as CheckpointMetadata,
          {},
        );
      const before = uuid6(-1);
      await put("a", before, { user: "u1", score: 3, ok: true, none: null, tags: ["x"], Source: "s" });
      await put("b", uuid6(-1), { user: "u2" });

      expect((await saver.setup()).map((m) => m.tag)).toEqual([
        "0004_metadata_index",
        "0005_store_items",
        "0006_stored_thread_user_id",
        "0007_drop_thread_created_at_index",
      ]);
      const sideRows = async () =>
        Number((await pool.query<mysql.RowDataPacket[]>("select count(*) as n from checkpoint_metadata"))[0][0].n);
      // user, score, ok, none, Source of "a" and user of "b": scalars only, source/step/run_id have columns.
      expect(await sideRows()).toBe(6);
      const ids = async (filter: Record<string, unknown>) => {
        const found: string[] = [];
        for await (const tuple of saver.list({}, { filter })) found.push(String(tuple.config.configurable?.thread_id));
        return found;
      };
      expect(await ids({ user: "u1" })).toEqual(["a"]);
      expect(await ids({ score: 3.0, ok: true, none: null })).toEqual(["a"]);
      expect(await ids({ Source: "s" })).toEqual(["a"]);
      expect(await ids({ tags: ["x"] })).toEqual(["a"]);

      await put("c", uuid6(-1), { user: "u1" });
      expect(await ids({ user: "u1" })).toEqual(["c", "a"]);
      await put("a", before, { user: "u3" }); // the same checkpoint again, new metadata
      expect(await ids({ user: "u1" })).toEqual(["c"]);
      expect(await ids({ user: "u3" })).toEqual(["a"]);
      await saver.deleteThread("a");
      await saver.deleteThread("c");
      expect(await sideRows()).toBe(1);
    } finally {
      await pool.end();
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
