import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { createClient } from "@libsql/client";
import { drizzle as drizzleD1 } from "drizzle-orm/d1";
import { drizzle as drizzleLibsql } from "drizzle-orm/libsql";
import { drizzle as drizzleMysql } from "drizzle-orm/mysql2";
import { drizzle as drizzleNodePg } from "drizzle-orm/node-postgres";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import mysql from "mysql2/promise";
import pg from "pg";
import { DrizzleSaver, type DrizzleSaverOptions, type SupportedDatabase } from "../../src/index.js";
import { type DialectName, freshDatabaseUrl } from "./databases.js";
import { openLocalD1 } from "./miniflare.js";

/**
 * The drivers beyond the three that `DrizzleSaver.fromUrl` opens by default (those are
 * tested by dialect name: postgres = postgres.js, mysql = mysql2 pool, sqlite =
 * better-sqlite3). Each is a drizzle database the test makes itself, as an application would.
 */
export const EXTRA_DRIVERS = ["pg-pool", "pg-client", "pglite", "mysql2-connection", "libsql", "d1"] as const;
export type ExtraDriver = (typeof EXTRA_DRIVERS)[number];

/** Every way of reaching a database the graph tests run on. */
export const TARGETS = ["sqlite", "postgres", "mysql", ...EXTRA_DRIVERS] as const;
export type Target = (typeof TARGETS)[number];

export const DIALECT_OF: Record<ExtraDriver, DialectName> = {
  "pg-pool": "postgres",
  "pg-client": "postgres",
  pglite: "postgres",
  "mysql2-connection": "mysql",
  libsql: "sqlite",
  d1: "sqlite",
};

export interface OpenDatabase {
  db: SupportedDatabase;
  /** Another drizzle database on the same data (a second connection; PGlite: the same instance). */
  another(): Promise<OpenDatabase>;
  close(): Promise<void>;
}

/** A fresh, empty database reached through `driver`. */
export async function openFresh(driver: ExtraDriver): Promise<OpenDatabase> {
  if (driver === "pglite") {
    const client = new PGlite();
    await client.waitReady;
    const open: OpenDatabase = {
      db: drizzlePglite(client),
      another: async () => ({ ...open, close: async () => {} }),
      close: () => client.close(),
    };
    return open;
  }
  if (driver === "libsql") {
    const url = `file:${join(mkdtempSync(join(tmpdir(), "lgcd-libsql-")), "test.db")}`;
    return openLibsql(url);
  }
  if (driver === "d1") return openD1();
  return openUrl(driver, await freshDatabaseUrl(DIALECT_OF[driver]));
}

/**
 * A local Cloudflare D1 database through miniflare (in memory): one Miniflare (one
 * workerd process) per fresh database, disposed on close. The binding is miniflare's
 * proxy of the real D1 API in workerd; `another` is a second drizzle database over it.
 */
async function openD1(): Promise<OpenDatabase> {
  const { miniflare, binding } = await openLocalD1();
  const another = async (): Promise<OpenDatabase> => ({ db: drizzleD1(binding), another, close: async () => {} });
  return { db: drizzleD1(binding), another, close: () => miniflare.dispose() };
}

async function openLibsql(url: string): Promise<OpenDatabase> {
  // Busy timeout: another connection (a transaction, another process) may hold the write lock.
  const client = createClient({ url, timeout: 10_000 });
  await client.execute("pragma journal_mode = wal");
  return { db: drizzleLibsql(client), another: () => openLibsql(url), close: async () => client.close() };
}

async function openUrl(driver: Exclude<ExtraDriver, "pglite" | "libsql" | "d1">, url: string): Promise<OpenDatabase> {
  const another = () => openUrl(driver, url);
  if (driver === "pg-pool") {
    const pool = new pg.Pool({ connectionString: url, max: 4 });
    return { db: drizzleNodePg(pool), another, close: () => pool.end() };
  }
  if (driver === "pg-client") {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    return { db: drizzleNodePg(client), another, close: () => client.end() };
  }
  const connection = await mysql.createConnection({ uri: url, charset: "utf8mb4", supportBigNumbers: true });
  return { db: drizzleMysql(connection), another, close: () => connection.end() };
}

/** A saver over a fresh database reached through `driver`, with the migrations applied. */
export async function freshDriverSaver(driver: ExtraDriver, options: DrizzleSaverOptions = {}) {
  const database = await openFresh(driver);
  const saver = new DrizzleSaver(database.db, options);
  await saver.setup();
  return { saver, database };
}

/** Empties the saver's tables between tests that share one database. */
export async function clearSaver(saver: DrizzleSaver): Promise<void> {
  for await (const tuple of saver.list({})) {
    await saver.deleteThread(tuple.config.configurable?.thread_id as string);
  }
}
