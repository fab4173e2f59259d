import { type Checkpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import Database from "better-sqlite3";
import type { Logger } from "drizzle-orm";
import { drizzle as drizzleSqlite } from "drizzle-orm/better-sqlite3";
import { drizzle as drizzleNodePostgres } from "drizzle-orm/node-postgres";
import { drizzle as drizzlePostgresJs } from "drizzle-orm/postgres-js";
import pg from "pg";
import postgres from "postgres";
import { describe, expect, it } from "vitest";
import { DrizzleSaver } from "../../src/index.js";
import { freshDatabaseUrl } from "../helpers/databases.js";

/**
 * How statements reach the drivers (src/sql/statements.ts): templates compiled
 * once, prepared on postgres.js, cached on better-sqlite3, drizzle's session
 * otherwise; drizzle's logger sees every one of them.
 */

function checkpoint(step: number): Checkpoint {
  return {
    v: 4,
    id: uuid6(-1),
    ts: new Date().toISOString(),
    channel_values: { messages: ["m"], step },
    channel_versions: { messages: "1", step: `${step + 1}` },
    versions_seen: {},
  };
}

/**
 * Three steps (the first writes both channels, the next ones only `step`, so they
 * refer to the stored `messages` and lock their parent), then reads.
 */
async function exercise(saver: DrizzleSaver) {
  let config = { configurable: { thread_id: "t", checkpoint_ns: "" } };
  for (let step = 0; step < 3; step++) {
    const next = checkpoint(step);
    const newVersions = step === 0 ? next.channel_versions : { step: next.channel_versions.step };
    config = (await saver.put(config, next, { source: "loop", step, parents: {} }, newVersions)) as never;
    await saver.putWrites(config, [["messages", `reply ${step}`]], `task-${step}`);
  }
  const latest = await saver.getTuple({ configurable: { thread_id: "t" } });
  const history = [];
  for await (const tuple of saver.list({ configurable: { thread_id: "t" } }, { limit: 10 })) history.push(tuple);
  return { latest, history };
}

function expectThreeSteps({ latest, history }: Awaited<ReturnType<typeof exercise>>) {
  expect(latest?.checkpoint.channel_values).toEqual({ messages: ["m"], step: 2 });
  expect(latest?.pendingWrites).toEqual([["task-2", "messages", "reply 2"]]);
  expect(history.map((tuple) => tuple.metadata?.step)).toEqual([2, 1, 0]);
}

function recordingLogger(): Logger & { queries: string[] } {
  const queries: string[] = [];
  return { queries, logQuery: (query) => queries.push(query) };
}

describe("statements on PostgreSQL", () => {
  it("run prepared on postgres.js, one text per shape, and drizzle's logger sees them", async () => {
    const client = postgres(await freshDatabaseUrl("postgres"), { onnotice: () => {} });
    const logger = recordingLogger();
    try {
      const saver = new DrizzleSaver(drizzlePostgresJs(client, { logger }));
      await saver.setup();
      logger.queries.length = 0;
      expectThreeSteps(await exercise(saver));
      // One statement per call: three puts (the two with a parent lock share a text), three
      // putWrites (each locks the checkpoint this saver stored; one text), a getTuple and a list.
      const guarded = logger.queries.filter((query) => query.includes("guard"));
      expect(guarded.length).toBe(5);
      expect(new Set(guarded).size).toBe(2);
      expect(logger.queries.length).toBe(8);
    } finally {
      await client.end();
    }
  });

  it("work on a postgres.js client made with prepare: false (PgBouncer in transaction mode)", async () => {
    const client = postgres(await freshDatabaseUrl("postgres"), { onnotice: () => {}, prepare: false });
    try {
      const saver = new DrizzleSaver(drizzlePostgresJs(client));
      await saver.setup();
      expectThreeSteps(await exercise(saver));
    } finally {
      await client.end();
    }
  });

  it("work through drizzle's session on node-postgres", async () => {
    const pool = new pg.Pool({ connectionString: await freshDatabaseUrl("postgres") });
    const logger = recordingLogger();
    try {
      const saver = new DrizzleSaver(drizzleNodePostgres(pool, { logger }));
      await saver.setup();
      expectThreeSteps(await exercise(saver));
      expect(logger.queries.some((query) => query.includes("guard"))).toBe(true);
    } finally {
      await pool.end();
    }
  });
});

describe("statements on SQLite", () => {
  it("are compiled once per shape on better-sqlite3", async () => {
    const sqlite = new Database(":memory:");
    const prepared: string[] = [];
    const prepare = sqlite.prepare.bind(sqlite);
    sqlite.prepare = ((source: string) => {
      prepared.push(source);
      return prepare(source);
    }) as typeof sqlite.prepare;
    try {
      const saver = new DrizzleSaver(drizzleSqlite(sqlite));
      await saver.setup();
      prepared.length = 0;
      expectThreeSteps(await exercise(saver));
      // Every text is prepared once however often it runs.
      expect(prepared.length).toBe(new Set(prepared).size);
      // Exactly these texts (BEGIN and COMMIT were prepared by setup; a unit alone in its
      // turn needs no savepoint): the thread row, two blob inserts (two channels, then
      // one), checkpoint and write inserts, the parent check, and the page and
      // related-rows queries of getTuple and of list.
      expect(prepared.length).toBe(10);
    } finally {
      sqlite.close();
    }
  });

  it("work through drizzle's session when the client is not better-sqlite3", async () => {
    const sqlite = new Database(":memory:");
    const logger = recordingLogger();
    try {
      const db = drizzleSqlite(sqlite, { logger });
      // The same database, but the saver cannot see a better-sqlite3 client behind it.
      Object.defineProperty(db, "$client", { value: undefined });
      const saver = new DrizzleSaver(db);
      await saver.setup();
      expectThreeSteps(await exercise(saver));
      expect(logger.queries.length).toBeGreaterThan(8);
    } finally {
      sqlite.close();
    }
  });
});
