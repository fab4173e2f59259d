/**
 * The cost of each call a graph step makes, as counts that a change must not raise
 * without meaning to: statements sent per call (drizzle's logger sees each one, so on
 * a server each is a round trip) and indexes on each table (each is written by every
 * insert). Times are for the benchmarks (BENCHMARKS.md); these are the guards.
 */
import { type Checkpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import Database from "better-sqlite3";
import { drizzle as drizzleSqlite } from "drizzle-orm/better-sqlite3";
import { drizzle as drizzleMysql } from "drizzle-orm/mysql2";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import mysql from "mysql2/promise";
import postgres from "postgres";
import { describe, expect, it } from "vitest";
import { DrizzleSaver } from "../../src/index.js";
import { type DialectName, freshDatabaseUrl } from "../helpers/databases.js";

type Call =
  | "first put"
  | "put"
  | "putWrites"
  | "getTuple (latest)"
  | "getTuple (by id)"
  | "list (limit 10)"
  | "list (filter, limit 10)";

/** Statements per call on each dialect's default driver. */
const STATEMENTS: Record<DialectName, Record<Call, number>> = {
  // A write unit: BEGIN IMMEDIATE, its statements, COMMIT (a group commit shares BEGIN and
  // COMMIT between the units of one turn). A read: the page, its writes and blobs, and
  // (for a page with incremental values) their bases.
  sqlite: {
    "first put": 5,
    put: 6,
    putWrites: 4,
    "getTuple (latest)": 3,
    "getTuple (by id)": 2,
    "list (limit 10)": 2,
    "list (filter, limit 10)": 3,
  },
  // One statement per call: a put's statements and its parent check are CTEs of one.
  postgres: {
    "first put": 1,
    put: 1,
    putWrites: 1,
    "getTuple (latest)": 1,
    "getTuple (by id)": 1,
    "list (limit 10)": 1,
    "list (filter, limit 10)": 1,
  },
  // MariaDB: a write unit is one compound statement (its transaction, the parent or
  // checkpoint check, the thread row's lock and upsert, blobs, checkpoint); the first
  // write also asks the server's version, once. Reads as on SQLite.
  mysql: {
    "first put": 2,
    put: 1,
    putWrites: 1,
    "getTuple (latest)": 3,
    "getTuple (by id)": 2,
    "list (limit 10)": 2,
    "list (filter, limit 10)": 3,
  },
};

/**
 * Indexes on each table, the primary key included (PostgreSQL: on the partitioned parent;
 * its GIN index on the metadata serves every metadata key, where SQLite and MySQL index
 * source, step and run id in columns of their own).
 */
const INDEXES: Record<DialectName, Record<string, number>> = {
  sqlite: { checkpoints: 6, checkpoint_blobs: 1, checkpoint_writes: 1, checkpoint_threads: 4 },
  postgres: { checkpoints: 4, checkpoint_blobs: 1, checkpoint_writes: 1, checkpoint_threads: 4 },
  mysql: { checkpoints: 6, checkpoint_blobs: 1, checkpoint_writes: 1, checkpoint_threads: 4, checkpoint_metadata: 2 },
};

/**
 * SQLite: the index entries one row adds, over every index of its table, read from
 * dbstat (so they count what SQLite wrote; each is a B-tree insert a put pays for). A
 * root "loop" checkpoint without a run id: its primary key, checkpoint_id, meta_step and
 * (thread_id, checkpoint_id) (the partial meta_source and meta_run_id skip it). A
 * thread without a user id: its primary key, updated_at and created_at (the partial
 * meta_user_id skips it).
 */
const SQLITE_INDEX_ENTRIES_PER_ROW = { checkpoints: 4, checkpoint_threads: 3 };

interface Opened {
  saver: DrizzleSaver;
  indexes(): Promise<Record<string, number>>;
  /** SQLite: entries in a table's indexes per row. */
  indexEntriesPerRow?(table: string): number;
  close(): Promise<void>;
}

async function open(dialect: DialectName, logQuery: (query: string) => void): Promise<Opened> {
  const url = await freshDatabaseUrl(dialect);
  const logger = { logQuery };
  if (dialect === "sqlite") {
    const sqlite = new Database(url);
    const count = (table: string) => (sqlite.pragma(`index_list(${table})`) as unknown[]).length;
    return {
      saver: new DrizzleSaver(drizzleSqlite(sqlite, { logger })),
      indexes: async () => Object.fromEntries(Object.keys(INDEXES.sqlite).map((table) => [table, count(table)])),
      indexEntriesPerRow: (table) => {
        const names = (sqlite.pragma(`index_list(${table})`) as { name: string }[]).map((index) => index.name);
        const cells = sqlite.prepare(
          "select coalesce(sum(ncell), 0) as n from dbstat where name = ? and pagetype = 'leaf'",
        );
        const entries = names.reduce((sum, name) => sum + Number((cells.get(name) as { n: number }).n), 0);
        const { rows } = sqlite.prepare(`select count(*) as rows from ${table}`).get() as { rows: number };
        return entries / rows;
      },
      close: async () => {
        sqlite.close();
      },
    };
  }
  if (dialect === "postgres") {
    const client = postgres(url, { onnotice: () => {} });
    return {
      saver: new DrizzleSaver(drizzlePostgres(client, { logger })),
      indexes: async () => {
        const rows = await client`select tablename, count(*)::int as n from pg_indexes
          where schemaname = current_schema() and tablename = any(${Object.keys(INDEXES.postgres)}) group by tablename`;
        return Object.fromEntries(rows.map((row) => [row.tablename, row.n]));
      },
      close: () => client.end(),
    };
  }
  const pool = mysql.createPool({ uri: url, connectionLimit: 2 });
  return {
    saver: new DrizzleSaver(drizzleMysql(pool, { logger })),
    indexes: async () => {
      const [rows] = (await pool.query(
        `select table_name as t, count(distinct index_name) as n from information_schema.statistics
         where table_schema = database() group by table_name`,
      )) as unknown as [{ t: string; n: number }[]];
      return Object.fromEntries(rows.map((row) => [row.t, Number(row.n)]));
    },
    close: () => pool.end(),
  };
}

function checkpoint(step: number): Checkpoint {
  return {
    v: 4,
    id: uuid6(step),
    ts: new Date().toISOString(),
    channel_values: { messages: Array.from({ length: step + 1 }, (_, k) => `message ${k}`), step },
    channel_versions: { messages: step + 1, step: step + 1, context: 1 },
    versions_seen: {},
  };
}

describe.each(["sqlite", "postgres", "mysql"] as const)("%s: what each call costs", (dialect) => {
  it("sends the statements it always sent, into tables with the indexes they always had", async () => {
    let sent = 0;
    const opened = await open(dialect, () => {
      sent++;
    });
    const { saver } = opened;
    const measure = async (run: () => Promise<unknown>) => {
      sent = 0;
      await run();
      return sent;
    };
    try {
      await saver.setup();
      const counts: Partial<Record<Call, number>> = {};
      const first = checkpoint(0);
      const root = { configurable: { thread_id: "t", checkpoint_ns: "" } };
      const metadata = { source: "loop" as const, step: 0, parents: {} };
      counts["first put"] = await measure(() =>
        saver.put(root, { ...first, channel_values: { ...first.channel_values, context: "c" } }, metadata, {
          messages: 1,
          step: 1,
          context: 1,
        }),
      );
      const config = { configurable: { ...root.configurable, checkpoint_id: first.id } };
      // The second step changes two of three channels: it relies on its parent's `context`.
      const second = checkpoint(1);
      counts.put = await measure(() => saver.put(config, second, { ...metadata, step: 1 }, { messages: 2, step: 2 }));
      const secondConfig = { configurable: { ...root.configurable, checkpoint_id: second.id } };
      counts.putWrites = await measure(() =>
        saver.putWrites(
          secondConfig,
          [
            ["a", 1],
            ["b", 2],
          ],
          "task",
        ),
      );
      counts["getTuple (latest)"] = await measure(() => saver.getTuple(root));
      counts["getTuple (by id)"] = await measure(() => saver.getTuple(config));
      counts["list (limit 10)"] = await measure(async () => {
        for await (const _ of saver.list(root, { limit: 10 })) {
          // drain
        }
      });
      // Finds the second checkpoint alone: its `messages` extends a value the page does not hold.
      counts["list (filter, limit 10)"] = await measure(async () => {
        const found = [];
        for await (const tuple of saver.list({}, { filter: { step: 1 }, limit: 10 })) found.push(tuple);
        expect(found.map((tuple) => tuple.checkpoint.channel_values.messages)).toEqual([["message 0", "message 1"]]);
      });
      expect(counts).toEqual(STATEMENTS[dialect]);
      const indexes = await opened.indexes();
      for (const [table, count] of Object.entries(INDEXES[dialect]))
        expect([table, indexes[table]]).toEqual([table, count]);
      const { indexEntriesPerRow } = opened;
      if (indexEntriesPerRow) {
        const perRow = Object.keys(SQLITE_INDEX_ENTRIES_PER_ROW).map((table) => [table, indexEntriesPerRow(table)]);
        expect(Object.fromEntries(perRow)).toEqual(SQLITE_INDEX_ENTRIES_PER_ROW);
      }
    } finally {
      await saver.close();
      await opened.close();
    }
  });
});
