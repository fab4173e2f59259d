/**
 * What our saver's reads cost in statement handling alone: the SQL that `getTuple`
 * and the cross-thread filter send, captured from drizzle, run again directly
 *
 * - PostgreSQL: unprepared (`prepare: false`, as drizzle's `db.execute` sends it:
 *   postgres.js asks for the parameter types first, and the server parses and plans
 *   every call) against prepared (postgres.js caches the statement per connection);
 *   plus the planning and execution times EXPLAIN ANALYZE reports;
 * - SQLite: prepared afresh on every call (as the saver does now) against a cached
 *   better-sqlite3 statement, next to the saver's own end-to-end call.
 *
 *   npm run build && PG_URL=postgres://... npx tsx bench/statement-cost.ts     (without PG_URL: SQLite only)
 */

import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import Database from "better-sqlite3";
import { drizzle as drizzleSqlite } from "drizzle-orm/better-sqlite3";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import { shipped } from "./shipped.js";
import { formatMs, median, now } from "./stats.js";
import { Workspace } from "./subjects.js";
import { threadIdOf, writeThreads } from "./workload.js";

const { DrizzleSaver } = shipped;

const THREADS = Number(process.env.BENCH_THREADS ?? 300);
const STEPS = 10;
const RUNS = 150;
const WARMUP = 20;

interface Captured {
  query: string;
  params: unknown[];
}

class Capture {
  recording: Captured[] | undefined;
  logQuery(query: string, params: unknown[]): void {
    this.recording?.push({ query, params });
  }
  async record(run: () => Promise<unknown>): Promise<Captured[]> {
    this.recording = [];
    try {
      await run();
      return this.recording;
    } finally {
      this.recording = undefined;
    }
  }
}

async function timeIt(run: () => unknown): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const start = now();
    await run();
    if (i >= WARMUP) samples.push(now() - start);
  }
  return median(samples);
}

const reads = (saver: BaseCheckpointSaver) => ({
  "getTuple (latest)": () => saver.getTuple({ configurable: { thread_id: threadIdOf(7), checkpoint_ns: "" } }),
  "filter { user, step }, limit 5": async () => {
    for await (const _ of saver.list({}, { filter: { user: "u7", step: 3 }, limit: 5 })) {
      // drain
    }
  },
});

async function fill(saver: BaseCheckpointSaver): Promise<void> {
  const threads = Array.from({ length: THREADS }, (_, i) => i);
  await writeThreads(saver, threads, { steps: STEPS, writers: 8, threadsPerUser: 20, ids: new Map(), onOp: () => {} });
}

async function postgresCosts(workspace: Workspace): Promise<void> {
  const url = await workspace.pgDatabase("statements");
  const client = postgres(url, { onnotice: () => {} });
  try {
    const capture = new Capture();
    const saver = new DrizzleSaver(drizzlePostgres(client, { logger: capture }));
    await saver.setup();
    await fill(saver);
    await client.unsafe("analyze");
    for (const [name, read] of Object.entries(reads(saver))) {
      const end = await timeIt(read);
      const [first] = await capture.record(read);
      const params = first.params as postgres.ParameterOrJSON<never>[];
      const unprepared = await timeIt(() => client.unsafe(first.query, params, { prepare: false }));
      const prepared = await timeIt(() => client.unsafe(first.query, params, { prepare: true }));
      const plan = (await client.unsafe(`explain (analyze, summary on, costs off) ${first.query}`, params))
        .map((row) => String(Object.values(row)[0]))
        .filter((line) => /^(Planning|Execution) Time/.test(line))
        .join(", ");
      console.log(
        `PostgreSQL ${name}: saver call ${formatMs(end)}; its first statement unprepared ${formatMs(unprepared)}, prepared ${formatMs(prepared)} (${plan})`,
      );
    }
  } finally {
    await client.end();
  }
}

async function sqliteCosts(workspace: Workspace): Promise<void> {
  const db = new Database(workspace.sqliteFile("statements"));
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  try {
    const capture = new Capture();
    const saver = new DrizzleSaver(drizzleSqlite(db, { logger: capture }));
    await saver.setup();
    await fill(saver);
    for (const [name, read] of Object.entries(reads(saver))) {
      const end = await timeIt(read);
      const queries = await capture.record(read);
      const fresh = await timeIt(() => {
        for (const { query, params } of queries) db.prepare(query).all(...params);
      });
      const statements = queries.map(({ query }) => db.prepare(query));
      const cached = await timeIt(() => {
        for (const [i, { params }] of queries.entries()) statements[i].all(...params);
      });
      console.log(
        `SQLite ${name}: saver call ${formatMs(end)}; its ${queries.length} statements prepared each time ${formatMs(fresh)}, cached ${formatMs(cached)}`,
      );
    }
  } finally {
    db.close();
  }
}

async function main(): Promise<void> {
  const workspace = new Workspace({ pgUrl: process.env.PG_URL });
  try {
    if (process.env.PG_URL) await postgresCosts(workspace);
    await sqliteCosts(workspace);
  } finally {
    await workspace.drop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
