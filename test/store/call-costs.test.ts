/**
 * What the store's calls cost, as counts and plans a change must not worsen without
 * meaning to: statements per call on each dialect's default driver, and on PostgreSQL
 * the plan of a filtered search in one namespace, which must read that namespace's
 * range of the primary key and nothing that grows with the rest of the table.
 */
import Database from "better-sqlite3";
import { drizzle as drizzleSqlite } from "drizzle-orm/better-sqlite3";
import { drizzle as drizzleMysql } from "drizzle-orm/mysql2";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import mysql from "mysql2/promise";
import postgres from "postgres";
import { describe, expect, it } from "vitest";
import { DrizzleStore } from "../../src/index.js";
import { getStatement, writeStatements } from "../../src/savers/store/statements.js";
import { type Bound, isBound, type Statement } from "../../src/sql/statements.js";
import { type DialectName, freshDatabaseUrl } from "../helpers/databases.js";

interface Logged {
  sql: string;
  params: unknown[];
}

interface Opened {
  store: DrizzleStore;
  /** PostgreSQL only: the client the store runs on, for EXPLAIN. */
  client?: postgres.Sql;
  close(): Promise<void>;
}

async function open(dialect: DialectName, log: Logged[]): Promise<Opened> {
  const url = await freshDatabaseUrl(dialect);
  const logger = { logQuery: (sql: string, params: unknown[]) => log.push({ sql, params }) };
  if (dialect === "sqlite") {
    const sqlite = new Database(url);
    const close = async () => {
      sqlite.close();
    };
    return { store: new DrizzleStore(drizzleSqlite(sqlite, { logger })), close };
  }
  if (dialect === "postgres") {
    const client = postgres(url, { onnotice: () => {} });
    return { store: new DrizzleStore(drizzlePostgres(client, { logger })), client, close: () => client.end() };
  }
  const pool = mysql.createPool({ uri: url, connectionLimit: 2 });
  return { store: new DrizzleStore(drizzleMysql(pool, { logger })), close: () => pool.end() };
}

const value = (i: number) => ({ kind: i % 4 === 0 ? "fact" : "chat", n: i % 100 });

describe.each(["sqlite", "postgres", "mysql"] as const)("%s: what each store call costs", (dialect) => {
  it("sends one statement for a put, a get, a delete and a filtered search", async () => {
    const log: Logged[] = [];
    const { store, close } = await open(dialect, log);
    try {
      await store.setup();
      const sent = async (call: () => Promise<unknown>) => {
        log.length = 0;
        await call();
        return log.length;
      };
      expect(await sent(() => store.put(["users", "u1"], "a", value(0)))).toBe(1);
      // The second put and get run the templates the first ones compiled.
      expect(await sent(() => store.put(["users", "u1"], "b", value(4)))).toBe(1);
      expect(await sent(() => store.get(["users", "u1"], "a"))).toBe(1);
      expect(await sent(() => store.get(["users", "u1"], "b"))).toBe(1);
      expect(await sent(() => store.search(["users"], { filter: { kind: "fact", n: { $gte: 0 } } }))).toBe(1);
      expect(await sent(() => store.delete(["users", "u1"], "a"))).toBe(1);
      // A batch's upserts go in pieces of about 1 MiB of values (each a packet of its own on MySQL).
      const items = Array.from({ length: 5 }, (_, i) => ({
        namespace: ["big"],
        key: `k${i}`,
        value: { t: "x".repeat(400_000) },
      }));
      log.length = 0;
      await store.batch(items);
      expect(log.filter((entry) => /^insert into/i.test(entry.sql.trim())).length).toBe(3);
      expect((await store.search(["users"])).map((item) => item.key)).toEqual(["b"]);
    } finally {
      await close();
    }
  });
});

it("runs a put, a get and a delete as templates, built once per shape", async () => {
  const { store, close } = await open("sqlite", []);
  try {
    // The dialect the store runs on (private: what its batches pass to the statements).
    const dialect = (store as unknown as { store: Parameters<typeof getStatement>[0] }).store;
    const get = (key: string) => getStatement(dialect, { kind: "get", namespace: ["a"], path: "a", key }, 1);
    const put = (key: string, json: string | null) =>
      writeStatements(
        dialect,
        [
          {
            plan: { kind: "put", namespace: ["a"], path: "a", key, json, value: null },
            embeddings: null,
            expiresAt: null,
            ttlMinutes: null,
          },
        ],
        1,
      )[0];
    const template = (statement: Statement) => {
      expect(isBound(statement)).toBe(true);
      return (statement as Bound).template;
    };
    expect(template(get("x"))).toBe(template(get("y")));
    expect(template(put("x", "{}"))).toBe(template(put("y", '{"a":1}')));
    expect(template(put("x", null))).toBe(template(put("y", null)));
  } finally {
    await close();
  }
});

describe("postgres: the plan of a filtered search in one namespace", () => {
  it("reads the namespace's range of the primary key, not the expiry index, even before statistics", async () => {
    const log: Logged[] = [];
    const { store, client, close } = await open("postgres", log);
    const sql = client as postgres.Sql;
    try {
      await store.setup();
      // Many items without a ttl (each an entry of the expiry index) and no ANALYZE yet, as
      // in a table autovacuum has not reached (with 4,000 the planner kept to the key anyway).
      for (let start = 0; start < 40_000; start += 500) {
        await store.batch(
          Array.from({ length: 500 }, (_, k) => ({
            namespace: ["tenants", `t${(start + k) % 97}`],
            key: `k${start + k}`,
            value: value(start + k),
          })),
        );
      }
      log.length = 0;
      const found = await store.search(["tenants", "t7"], { filter: { kind: "fact", n: { $gte: 10 } } });
      expect(found.length).toBeGreaterThan(0);
      const [search] = log;
      const literal = (param: unknown) =>
        typeof param === "number" ? String(param) : `'${String(param).replaceAll("'", "''")}'`;
      // The plan PostgreSQL keeps for a prepared statement after its first runs: one for any values.
      const connection = await sql.reserve();
      let plan: string;
      try {
        await connection.unsafe("set plan_cache_mode = force_generic_plan");
        await connection.unsafe(`prepare search as ${search.sql}`);
        const rows = await connection.unsafe(`explain execute search(${search.params.map(literal).join(", ")})`);
        plan = rows.map((row) => String(row["QUERY PLAN"])).join("\n");
      } finally {
        await connection.unsafe("deallocate search; reset plan_cache_mode");
        connection.release();
      }
      expect(plan).toMatch(/store_items_pk/);
      expect(plan).not.toMatch(/expires_at_idx/);
      expect(plan).not.toMatch(/Seq Scan/);
    } finally {
      await close();
    }
  });
});
