import { rmSync } from "node:fs";
import { type CheckpointMetadata, uuid6 } from "@langchain/langgraph-checkpoint";
import Database from "better-sqlite3";
import { drizzle as drizzleSqlite } from "drizzle-orm/better-sqlite3";
import { drizzle as drizzleMysql } from "drizzle-orm/mysql2";
import { drizzle as drizzlePg } from "drizzle-orm/postgres-js";
import mysql from "mysql2/promise";
import postgres from "postgres";
import { describe, expect, it } from "vitest";
import { DrizzleSaver } from "../../src/index.js";
import { migrate } from "../../src/savers/migrations/migrate.js";
import { resolve } from "../../src/wiring/registry.js";
import { freshDatabaseUrl } from "../helpers/databases.js";
import { copyMySqlRows, copyPgRows, releasedUpTo, seedMySqlDatabase, sqliteCopyStatements } from "./earlier-rows.js";

/**
 * 0002_thread_table (SQLite: 0001) from the release before it, holding data: its
 * backfill must give every thread the row that today's put path keeps. The rows are
 * written by today's saver in a scratch place (whose checkpoint_threads the put path
 * filled) and copied into the database under test (see earlier-rows.ts).
 */

const OPTIONS = { migrationTable: "langgraph_checkpoint_migrations" };

/** Threads with root and subgraph checkpoints, one with subgraph ones only, one re-put. */
async function writeThreads(saver: DrizzleSaver): Promise<void> {
  const put = (thread: string, ns: string, metadata: Record<string, unknown>, id = uuid6(-1)) =>
    saver.put(
      { configurable: { thread_id: thread, checkpoint_ns: ns } },
      { v: 4, id, ts: "", channel_values: { n: id }, channel_versions: { n: id }, versions_seen: {} },
      { source: "loop", parents: {}, ...metadata } as CheckpointMetadata,
      { n: id },
    );
  for (let step = 0; step < 5; step++) await put("a", "", { step, user_id: "u1" });
  await put("a", "child:1", { step: 9, user_id: "other" });
  await put("b", "child:2", { step: 0 });
  const id = uuid6(-1);
  await put("c", "", { step: 0, user_id: "u2" }, id);
  await put("c", "", { step: 1, user_id: "u3" }, id); // the same checkpoint again: counted once
  await put("c", "sub", { step: 2 });
}

const ROW_COLUMNS =
  "thread_id, created_at, updated_at, checkpoints, latest_checkpoint_id, metadata, pinned from checkpoint_threads order by thread_id";

/** A stored time as epoch milliseconds: a Date, a timestamptz text, or a number. */
const millis = (value: unknown) =>
  value instanceof Date
    ? value.getTime()
    : typeof value === "string" && /\D/.test(value)
      ? Date.parse(value)
      : Number(value);

function normalize(rows: Record<string, unknown>[]) {
  return rows.map((row) => ({
    ...row,
    thread_id: String(row.thread_id),
    latest_checkpoint_id: row.latest_checkpoint_id === null ? null : String(row.latest_checkpoint_id),
    created_at: millis(row.created_at),
    updated_at: millis(row.updated_at),
    checkpoints: Number(row.checkpoints),
    metadata: typeof row.metadata === "string" ? JSON.parse(row.metadata) : row.metadata,
    pinned: Boolean(Number(row.pinned)),
  }));
}

/** What every dialect's backfilled rows must say, besides equalling the put path's rows. */
function expectShape(rows: ReturnType<typeof normalize>) {
  expect(rows.map((r) => [r.thread_id, r.checkpoints, r.metadata?.user_id ?? null, r.pinned])).toEqual([
    ["a", 5, "u1", false],
    ["b", 0, null, false],
    ["c", 1, "u3", false],
  ]);
  expect(rows[1].latest_checkpoint_id).toBeNull();
  for (const row of rows) expect(row.updated_at).toBeGreaterThanOrEqual(row.created_at);
}

async function expectSearchAfterUpgrade(saver: DrizzleSaver) {
  // Written after the upgrade: the put path takes over the backfilled row.
  await saver.put(
    { configurable: { thread_id: "a", checkpoint_ns: "" } },
    { v: 4, id: uuid6(-1), ts: "", channel_values: {}, channel_versions: {}, versions_seen: {} },
    { source: "loop", step: 5, parents: {}, user_id: "u1" } as CheckpointMetadata,
    {},
  );
  const latest = await saver.getTuple({ configurable: { thread_id: "a" } });
  expect(latest?.metadata?.step).toBe(5);
}

describe("0002_thread_table backfills one row per thread", () => {
  it("on PostgreSQL", async () => {
    const client = postgres(await freshDatabaseUrl("postgres"), { onnotice: () => {} });
    const folder = releasedUpTo("pg", 2);
    try {
      const options = { migrationsFolder: folder, migrationsTable: OPTIONS.migrationTable };
      expect(await migrate(resolve(drizzlePg(client), undefined).dialect, options)).toHaveLength(2);
      const writer = new DrizzleSaver(drizzlePg(client), { schema: "seed" });
      await writer.setup();
      await writeThreads(writer);
      await copyPgRows(client, "seed");
      const saver = new DrizzleSaver(drizzlePg(client));
      expect((await saver.setup()).map((m) => m.tag)).toEqual([
        "0002_thread_table",
        "0003_incremental_values",
        "0004_store_items",
        "0005_drop_thread_created_at_index",
      ]);
      const kept = normalize(await client.unsafe(`select ${ROW_COLUMNS.replace("from ", "from seed.")}`));
      const backfilled = normalize(await client.unsafe(`select ${ROW_COLUMNS}`));
      expect(backfilled).toEqual(kept);
      expectShape(backfilled);
      await expectSearchAfterUpgrade(saver);
      const [row] = await client`select checkpoints from checkpoint_threads where thread_id = 'a'`;
      expect(row.checkpoints).toBe(6);
    } finally {
      await client.end();
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it("on MariaDB", async () => {
    const url = await freshDatabaseUrl("mysql");
    const pool = mysql.createPool({ uri: url, charset: "utf8mb4", supportBigNumbers: true });
    const base = process.env.MYSQL_URL as string;
    const seed = await seedMySqlDatabase(base);
    const folder = releasedUpTo("mysql", 2);
    try {
      const options = { migrationsFolder: folder, migrationsTable: OPTIONS.migrationTable };
      expect(await migrate(resolve(drizzleMysql(pool), undefined).dialect, options)).toHaveLength(2);
      const writer = new DrizzleSaver(drizzleMysql(seed.pool));
      await writer.setup();
      await writeThreads(writer);
      await copyMySqlRows(pool, seed.name, false);
      const saver = new DrizzleSaver(drizzleMysql(pool));
      expect((await saver.setup()).map((m) => m.tag)).toEqual([
        "0002_thread_table",
        "0003_incremental_values",
        "0004_metadata_index",
        "0005_store_items",
        "0006_stored_thread_user_id",
        "0007_drop_thread_created_at_index",
      ]);
      const read = async (p: mysql.Pool) => normalize((await p.query(`select ${ROW_COLUMNS}`))[0] as never);
      const backfilled = await read(pool);
      expect(backfilled).toEqual(await read(seed.pool));
      expectShape(backfilled);
      await expectSearchAfterUpgrade(saver);
      const [rows] = await pool.query("select checkpoints from checkpoint_threads where thread_id = 'a'");
      expect((rows as { checkpoints: number }[])[0].checkpoints).toBe(6);
    } finally {
      await pool.end();
      await seed.pool.end();
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it("on SQLite", async () => {
    const file = await freshDatabaseUrl("sqlite");
    const seedFile = await freshDatabaseUrl("sqlite");
    const db = new Database(file);
    const seedDb = new Database(seedFile);
    const folder = releasedUpTo("sqlite", 1);
    try {
      const options = { migrationsFolder: folder, migrationsTable: OPTIONS.migrationTable };
      expect(await migrate(resolve(drizzleSqlite(db), undefined).dialect, options)).toHaveLength(1);
      const writer = new DrizzleSaver(drizzleSqlite(seedDb));
      await writer.setup();
      await writeThreads(writer);
      db.exec(`attach database '${seedFile.replaceAll("'", "''")}' as seed`);
      for (const statement of sqliteCopyStatements("seed")) db.exec(statement);
      const saver = new DrizzleSaver(drizzleSqlite(db));
      expect((await saver.setup()).map((m) => m.tag)).toEqual([
        "0001_thread_table",
        "0002_incremental_values",
        "0003_store_items",
        "0004_partial_metadata_indexes",
        "0005_drop_thread_created_at_index",
      ]);
      const backfilled = normalize(db.prepare(`select ${ROW_COLUMNS}`).all() as never);
      expect(backfilled).toEqual(normalize(seedDb.prepare(`select ${ROW_COLUMNS}`).all() as never));
      expectShape(backfilled);
      await expectSearchAfterUpgrade(saver);
      const row = db.prepare("select checkpoints from checkpoint_threads where thread_id = 'a'").get() as {
        checkpoints: number;
      };
      expect(row.checkpoints).toBe(6);
    } finally {
      db.close();
      seedDb.close();
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
