import Database from "better-sqlite3";
import type { Logger } from "drizzle-orm";
import { drizzle as drizzleSqlite } from "drizzle-orm/better-sqlite3";
import { drizzle as drizzleMysql } from "drizzle-orm/mysql2";
import { drizzle as drizzlePg } from "drizzle-orm/postgres-js";
import mysql from "mysql2/promise";
import postgres from "postgres";
import { DrizzleSaver } from "../../src/index.js";
import { DIALECTS, type DialectName, freshSaver } from "../helpers/databases.js";
import { cloneThread, EMPTY, insertChain, openRaw, type Row } from "./support.js";

/**
 * The retention lookups must use their indexes: expireThreads finds idle threads
 * on the per-thread table's (updated_at, thread_id) index, reading no checkpoint
 * to decide; deleteForRuns finds a run's checkpoints through the run id (a GIN
 * index on PostgreSQL, meta_run_id elsewhere). Neither may read every checkpoint.
 * Timing-free evidence: on PostgreSQL and MariaDB the rows the saver's own
 * connection reads (table and index statistics, handler counters); on SQLite,
 * which keeps no such counters, the plan of every statement it sent.
 */

const THREADS = 150;
/** Checkpoints per thread: a scan of every checkpoint reads at least this many rows per thread. */
const PER_THREAD = 50;
/**
 * Reads allowed in all to a lookup that finds nothing (a probe into each of the 8
 * partitions; MariaDB's counters include its status queries' own): far below the
 * threads (150) or the checkpoints (7,500) a scan would read.
 */
const LOOKUP_READS = 25;

interface Probe {
  saver: DrizzleSaver;
  statements: { sql: string; params: unknown[] }[];
  /** Rows and index entries read on the saver's tables so far, when the database counts them. */
  rowsRead(): Promise<number | undefined>;
  /** Plan lines of a statement the saver sent. */
  plan(statement: { sql: string; params: unknown[] }): Promise<string[]>;
  close(): Promise<void>;
}

/** A saver over one connection of its own, whose statements are recorded. */
function openProbe(dialect: DialectName, url: string): Probe {
  const statements: Probe["statements"] = [];
  const logger: Logger = { logQuery: (sql, params) => statements.push({ sql, params }) };
  if (dialect === "postgres") {
    const client = postgres(url, { max: 1, onnotice: () => {} });
    return {
      saver: new DrizzleSaver(drizzlePg(client, { logger })),
      statements,
      async rowsRead() {
        // Publish this connection's counters, then read them (PostgreSQL 15+).
        await client`select pg_stat_force_next_flush()`;
        const [row] = await client`
          select (select coalesce(sum(seq_tup_read), 0) from pg_stat_user_tables where relname like 'checkpoint%')
               + (select coalesce(sum(idx_tup_read), 0) from pg_stat_user_indexes where relname like 'checkpoint%') as n`;
        return Number(row.n);
      },
      async plan() {
        return [];
      },
      close: () => client.end(),
    };
  }
  if (dialect === "mysql") {
    const pool = mysql.createPool({ uri: url, charset: "utf8mb4", supportBigNumbers: true, connectionLimit: 1 });
    return {
      saver: new DrizzleSaver(drizzleMysql(pool, { logger })),
      statements,
      async rowsRead() {
        // The one connection's handler counters (every table; only checkpoints is read here).
        const [rows] = await pool.query("show session status like 'Handler_read%'");
        return (rows as Row[]).reduce((n, row) => n + Number(row.Value), 0);
      },
      async plan() {
        return [];
      },
      close: () => pool.end(),
    };
  }
  const sqlite = new Database(url);
  sqlite.pragma("busy_timeout = 10000");
  return {
    saver: new DrizzleSaver(drizzleSqlite(sqlite, { logger })),
    statements,
    async rowsRead() {
      return undefined;
    },
    async plan({ sql, params }) {
      return (sqlite.prepare(`explain query plan ${sql}`).all(...params) as Row[]).map((row) => String(row.detail));
    },
    close: async () => {
      sqlite.close();
    },
  };
}

/** Runs `body` on the probe and returns the rows it read (undefined on SQLite) and the statements it sent. */
async function measure(probe: Probe, body: () => Promise<void>) {
  const before = await probe.rowsRead();
  probe.statements.length = 0;
  await body();
  const after = await probe.rowsRead();
  const statements = [...probe.statements];
  expect(statements.length).toBeGreaterThan(0);
  return { read: before === undefined || after === undefined ? undefined : after - before, statements };
}

/** SQLite: the plan lines that touch `table`, for every statement. */
async function tablePlans(probe: Probe, statements: Probe["statements"], table: string): Promise<string[]> {
  const lines: string[] = [];
  for (const statement of statements) {
    lines.push(...(await probe.plan(statement)).filter((line) => new RegExp(`\\b${table}\\b`).test(line)));
  }
  return lines;
}

describe.each(DIALECTS)("index use on %s", (dialect) => {
  let probe: Probe;
  beforeAll(async () => {
    const { saver: setup, url } = await freshSaver(dialect);
    const raw = await openRaw(dialect, url);
    const template = `index-template-${process.pid}`;
    const threads = Array.from({ length: THREADS }, (_, i) => `index-${String(i).padStart(4, "0")}`);
    try {
      await insertChain(raw, setup, template, PER_THREAD, (i) => ({
        values: { step: i === 0 ? "start" : EMPTY },
        runId: `run-${i}`,
      }));
      await cloneThread(raw, template, threads);
      // Statistics as a live database has them, so plans reflect the table's real size.
      await raw.query(dialect === "mysql" ? "analyze table checkpoints" : "analyze");
    } finally {
      // Closed before measuring, so no other connection's counters arrive meanwhile.
      await raw.close();
      await setup.close();
    }
    // One connection for every measurement.
    probe = openProbe(dialect, url);
  }, 120_000);
  afterAll(async () => {
    await probe?.close();
  });

  it(`expireThreads finds idle threads on the per-thread table's index, reading no checkpoint (${THREADS} threads of ${PER_THREAD})`, async () => {
    // Nothing is idle since 1970: the call only scans.
    const { read, statements } = await measure(probe, async () => {
      expect(await probe.saver.expireThreads({ idleSince: new Date(0) })).toBe(0);
    });
    if (read !== undefined) {
      expect(read).toBeLessThanOrEqual(LOOKUP_READS);
    } else {
      expect(await tablePlans(probe, statements, "checkpoints")).toEqual([]);
      const threadPlans = await tablePlans(probe, statements, "checkpoint_threads");
      expect(threadPlans.length).toBeGreaterThan(0);
      for (const line of threadPlans) {
        expect(line).toMatch(/^SEARCH checkpoint_threads USING (COVERING )?INDEX checkpoint_threads_updated_at_idx /);
      }
    }
  }, 120_000);

  it("deleteForRuns finds a run's checkpoints through an index on the run id, not by reading every checkpoint", async () => {
    // No checkpoint has this run id: the lookup alone, which must not depend on the table's size.
    const { read, statements } = await measure(probe, async () => {
      await probe.saver.deleteForRuns(["no-such-run"]);
    });
    if (read !== undefined) {
      expect(read).toBeLessThanOrEqual(LOOKUP_READS);
    } else {
      const lines = await tablePlans(probe, statements, "checkpoints");
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) {
        expect(line).toMatch(/^SEARCH checkpoints USING (COVERING )?INDEX checkpoints_meta_run_id_idx /);
      }
    }
  });
});
