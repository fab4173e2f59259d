import { PGlite } from "@electric-sql/pglite";
import { MemorySaver } from "@langchain/langgraph";
import { createClient } from "@libsql/client";
import Database from "better-sqlite3";
import { sql } from "drizzle-orm";
import { drizzle as drizzleSqlite } from "drizzle-orm/better-sqlite3";
import { drizzle as drizzleD1 } from "drizzle-orm/d1";
import { drizzle as drizzleLibsql } from "drizzle-orm/libsql";
import { drizzle as drizzleMysql } from "drizzle-orm/mysql2";
import { drizzle as drizzleNodePg } from "drizzle-orm/node-postgres";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { drizzle as drizzlePostgresJs } from "drizzle-orm/postgres-js";
import mysql from "mysql2/promise";
import pg from "pg";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  clientOf,
  loggerOf,
  PUBLIC_API_ONLY,
  privateApiAvailable,
  sessionKind,
} from "../../src/drivers/drizzle-internals.js";
import { DrizzleSaver } from "../../src/index.js";
import { DRIVERS } from "../../src/wiring/registry.js";
import { buildApprovalGraph, newThread, normalHistory } from "../graphs/graphs.js";
import { freshDatabaseUrl } from "../helpers/databases.js";
import { clearSaver, type ExtraDriver, type OpenDatabase, openFresh } from "../helpers/drivers.js";
import { openLocalD1 } from "../helpers/miniflare.js";

/** One database per driver, opened as an application would. */
const opened: Record<string, { db: unknown; client: unknown; close(): Promise<void> }> = {};

beforeAll(async () => {
  const pgUrl = await freshDatabaseUrl("postgres");
  const mysqlUrl = await freshDatabaseUrl("mysql");
  const postgresJs = postgres(pgUrl, { onnotice: () => {} });
  const pool = new pg.Pool({ connectionString: pgUrl });
  const pglite = new PGlite();
  const mysqlPool = mysql.createPool({ uri: mysqlUrl, charset: "utf8mb4" });
  const sqlite = new Database(await freshDatabaseUrl("sqlite"));
  const libsql = createClient({ url: `file:${await freshDatabaseUrl("sqlite")}` });
  opened.postgres = { db: drizzlePostgresJs(postgresJs), client: postgresJs, close: () => postgresJs.end() };
  opened.pg = { db: drizzleNodePg(pool), client: pool, close: () => pool.end() };
  opened["@electric-sql/pglite"] = { db: drizzlePglite(pglite), client: pglite, close: () => pglite.close() };
  opened.mysql2 = { db: drizzleMysql(mysqlPool), client: mysqlPool, close: () => mysqlPool.end() };
  opened["better-sqlite3"] = { db: drizzleSqlite(sqlite), client: sqlite, close: async () => void sqlite.close() };
  opened["@libsql/client"] = { db: drizzleLibsql(libsql), client: libsql, close: async () => libsql.close() };
  const { miniflare, binding: d1 } = await openLocalD1();
  opened["Cloudflare D1"] = { db: drizzleD1(d1), client: d1, close: () => miniflare.dispose() };
});

afterAll(async () => {
  for (const { close } of Object.values(opened)) await close();
});

/**
 * The fast executors use parts of drizzle that are not its public API. When a drizzle
 * release changes them, these fail (the saver itself then takes the public path).
 */
describe("the drizzle internals the executors use", () => {
  it.each(DRIVERS.map((entry) => [entry.driver, entry.session]))(
    "%s: session %s, compiler, prepareQuery, client, logger",
    (driver, session) => {
      const { db, client } = opened[driver];
      expect(sessionKind(db)).toBe(session);
      expect(privateApiAvailable(db)).toBe(true);
      expect(clientOf(db)).toBe(client);
      expect(typeof loggerOf(db)?.logQuery).toBe("function");
    },
  );
});

/** The public path, forced: the same graph as on MemorySaver, and the lifecycle calls. */
describe.each(["sqlite", "postgres", "mysql", "pglite", "libsql", "pg-client", "d1"] as const)(
  "drizzle's public API only, on %s",
  (target) => {
    let database: OpenDatabase | { db: unknown; close(): Promise<void> };
    let saver: DrizzleSaver;
    beforeAll(async () => {
      process.env[PUBLIC_API_ONLY] = "1";
      if (target === "sqlite" || target === "postgres" || target === "mysql") {
        const url = await freshDatabaseUrl(target);
        saver = await DrizzleSaver.fromUrl(url);
        database = { db: undefined, close: () => saver.close() };
      } else {
        database = await openFresh(target as ExtraDriver);
        saver = new DrizzleSaver(database.db as never);
      }
      await saver.setup();
      // The public path has no compiler: it knows a statement's values, not its text.
      const { executor } = (saver as unknown as { dialect: { executor: { compile(s: unknown): { sql: string } } } })
        .dialect;
      expect(executor.compile(sql`select 1`).sql).toBe("");
    });
    afterAll(async () => {
      delete process.env[PUBLIC_API_ONLY];
      await database?.close();
    });

    it("runs a graph through an interrupt exactly like MemorySaver, and copies, prunes and deletes threads", async () => {
      const run = async (checkpointer: DrizzleSaver | MemorySaver) => {
        const graph = buildApprovalGraph(checkpointer, { review: 0 });
        const config = newThread("public");
        await graph.invoke({ request: "the post" }, config);
        const { Command } = await import("@langchain/langgraph");
        await graph.invoke(new Command({ resume: { approved: true, note: "ok" } }), config);
        return { config, history: await normalHistory(graph, config) };
      };
      const ours = await run(saver);
      expect(ours.history).toEqual((await run(new MemorySaver())).history);
      const thread = ours.config.configurable.thread_id;
      await saver.copyThread(thread, `${thread}-copy`);
      await saver.prune([`${thread}-copy`]);
      const copies = [];
      for await (const tuple of saver.list({ configurable: { thread_id: `${thread}-copy` } })) copies.push(tuple);
      expect(copies).toHaveLength(1);
      await clearSaver(saver);
      expect(await saver.getTuple(ours.config)).toBeUndefined();
    });
  },
);
