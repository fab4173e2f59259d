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
import { LruCache, placeholderRows, rowValues } from "../../src/sql/statements.js";
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

  it("run a filtered list as one template for every filter, the filter a parameter", async () => {
    const client = postgres(await freshDatabaseUrl("postgres"), { onnotice: () => {} });
    const logger = recordingLogger();
    try {
      const db = drizzlePostgresJs(client, { logger });
      // drizzle turns SQL into text in its dialect's sqlToQuery: counted after the first filter.
      const dialect = (db as unknown as { dialect: { sqlToQuery: (...args: unknown[]) => unknown } }).dialect;
      const sqlToQuery = dialect.sqlToQuery;
      let compiled = 0;
      dialect.sqlToQuery = (...args: unknown[]) => {
        compiled++;
        return sqlToQuery.apply(dialect, args);
      };
      const saver = new DrizzleSaver(db);
      await saver.setup();
      await exercise(saver);
      const filtered = async (filter: Record<string, unknown>) => {
        const steps = [];
        for await (const tuple of saver.list({}, { filter, limit: 5 })) steps.push(tuple.metadata?.step);
        return steps;
      };
      expect(await filtered({ source: "loop", step: 1 })).toEqual([1]);
      compiled = 0;
      logger.queries.length = 0;
      expect(await filtered({ step: 2 })).toEqual([2]);
      expect(await filtered({ source: "loop", step: 0, parents: {} })).toEqual([0]);
      expect(await filtered({ source: "input" })).toEqual([]);
      expect(compiled).toBe(0);
      expect(logger.queries.length).toBe(3);
      expect(new Set(logger.queries).size).toBe(1);
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

describe("the statement caches (src/sql/statements.ts)", () => {
  it("build each key once, hold at most their size, and give an entry used since the last pass a second chance", () => {
    const cache = new LruCache<string>(3);
    const built: string[] = [];
    const get = (key: string) =>
      cache.get(key, () => {
        built.push(key);
        return `value of ${key}`;
      });
    for (const key of ["a", "b", "c"]) expect(get(key)).toBe(`value of ${key}`);
    expect(get("a")).toBe("value of a"); // a hit: not built again
    get("d"); // full: "a" was used since it came in, so "b", the oldest unused, goes
    get("a");
    get("c");
    expect(built).toEqual(["a", "b", "c", "d"]);
    get("b");
    expect(built).toEqual(["a", "b", "c", "d", "b"]);
    // Each hit and rebuild left at most 3 entries: the 3 built last or kept are hits.
    const before = built.length;
    for (const key of ["a", "b", "c", "d"]) get(key);
    expect(built.length - before).toBeLessThanOrEqual(2);
  });

  it("name row values as placeholderRows names their placeholders, for every prefix and row", () => {
    for (const prefix of ["blob", "blob1_", "write"]) {
      for (const rows of [1, 3, 70]) {
        const placeholders = placeholderRows(prefix, rows, 4);
        const values = rowValues(
          prefix,
          Array.from({ length: rows }, (_, r) => [r, `${r}`, null, Buffer.from([r % 256])]),
        );
        const names = placeholders.flat().map((placeholder) => placeholder.name as string);
        expect(Object.keys(values).sort()).toEqual([...names].sort());
        expect(values[`${prefix}${rows - 1}.1`]).toBe(`${rows - 1}`);
      }
    }
  });
});
