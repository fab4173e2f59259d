// Recipe A (docs/already-on-drizzle.md) from the registry's point of view: an application's drizzle-kit loads
// a schema that imports langgraph-checkpoint-drizzle/pg, /mysql and /sqlite (through a
// CommonJS loader, whatever the application's module type), generates the saver's
// tables and applies them.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import mysql from "mysql2/promise";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshDatabaseUrl } from "../helpers/databases.js";
import { packedTarball, runIn, type ScratchApp, scratchApp, TOOLS } from "./tarball.js";

const FIXTURES = join(import.meta.dirname, "fixtures", "recipe-a");
const FILES = {
  "drizzle.config.ts": readFileSync(join(FIXTURES, "drizzle.config.ts"), "utf8"),
  "db/schema-pg.ts": readFileSync(join(FIXTURES, "schema-pg.ts"), "utf8"),
  "db/schema-mysql.ts": readFileSync(join(FIXTURES, "schema-mysql.ts"), "utf8"),
  "db/schema-sqlite.ts": readFileSync(join(FIXTURES, "schema-sqlite.ts"), "utf8"),
};
const SAVER_TABLES = ["lg_checkpoint_blobs", "lg_checkpoint_threads", "lg_checkpoint_writes", "lg_checkpoints"];

// Packing (a build) takes a while on a busy machine: once, before any test's own timeout runs.
beforeAll(() => packedTarball(), 300_000);

const apps: ScratchApp[] = [];
afterAll(() => {
  for (const app of apps) app.remove();
});

type Family = "pg" | "mysql" | "sqlite";

/** What the generated migration must create, in the dialect's quoting. */
const CREATES: Record<Family, string[]> = {
  pg: ['CREATE SCHEMA "agent"', 'CREATE TABLE "agent"."lg_checkpoints"', 'CREATE TABLE "users"'],
  mysql: ["CREATE TABLE `lg_checkpoints`", "CREATE TABLE `lg_checkpoint_writes`", "CREATE TABLE `users`"],
  sqlite: ["CREATE TABLE `lg_checkpoints`", "CREATE TABLE `lg_checkpoint_blobs`", "CREATE TABLE `users`"],
};

/** The saver's tables the database holds after the migration. */
async function saverTablesIn(family: Family, url: string): Promise<string[]> {
  if (family === "pg") {
    const client = postgres(url, { max: 1, onnotice: () => {} });
    try {
      const rows = await client`select table_name from information_schema.tables where table_schema = 'agent'`;
      return rows.map((row) => String(row.table_name)).sort();
    } finally {
      await client.end();
    }
  }
  if (family === "mysql") {
    const connection = await mysql.createConnection(url);
    try {
      const [rows] = await connection.query(
        "select table_name as name from information_schema.tables where table_schema = database() and table_name like 'lg\\_%'",
      );
      return (rows as { name: string }[]).map((row) => row.name).sort();
    } finally {
      await connection.end();
    }
  }
  const db = new Database(url, { readonly: true });
  try {
    const rows = db.prepare("select name from sqlite_master where type = 'table' and name like 'lg_%'").all();
    return (rows as { name: string }[]).map((row) => row.name).sort();
  } finally {
    db.close();
  }
}

describe.each(["module", "commonjs"] as const)("a %s application with recipe A", (type) => {
  describe.concurrent.each(["pg", "mysql", "sqlite"] as const)("on %s", (family) => {
    it("drizzle-kit generates the saver's tables from the package's schema module and migrates them", async () => {
      const app = await scratchApp(type, FILES, `recipe-${type}-${family}`);
      apps.push(app);
      const url =
        family === "sqlite" ? join(app.dir, "app.db") : await freshDatabaseUrl(family === "pg" ? "postgres" : "mysql");
      const env = { DIALECT: family, DATABASE_URL: url };
      await runIn(app.dir, process.execPath, [TOOLS.drizzleKit, "generate", "--name", "init"], env);
      const folder = join(app.dir, "drizzle", family);
      const [migration] = readdirSync(folder).filter((name) => name.endsWith(".sql"));
      const ddl = readFileSync(join(folder, migration), "utf8");
      for (const statement of CREATES[family]) expect(ddl).toContain(statement);

      await runIn(app.dir, process.execPath, [TOOLS.drizzleKit, "migrate"], env);
      expect(await saverTablesIn(family, url)).toEqual(SAVER_TABLES);
    });
  });
});
