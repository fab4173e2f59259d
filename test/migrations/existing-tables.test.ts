// setup() on a database that already holds tables of our names that it did not create:
// LangGraph's official PostgreSQL and SQLite savers use "checkpoints" too. It must stop
// with a clear error before changing anything, and leave those tables as they were.
import { emptyCheckpoint } from "@langchain/langgraph-checkpoint";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import Database from "better-sqlite3";
import mysql from "mysql2/promise";
import postgres from "postgres";
import { describe, expect, it } from "vitest";
import { DrizzleSaver, ExistingTablesError, MigrationError } from "../../src/index.js";
import { freshDatabaseUrl } from "../helpers/databases.js";

const config = { configurable: { thread_id: "official-thread", checkpoint_ns: "" } };
const metadata = { source: "input" as const, step: -1, parents: {} };

/** The error our setup() gives, with the database untouched by it. */
async function setupError(url: string): Promise<unknown> {
  const saver = await DrizzleSaver.fromUrl(url);
  try {
    return await saver.setup().then(
      () => undefined,
      (error: unknown) => error,
    );
  } finally {
    await saver.close();
  }
}

function expectExistingTables(error: unknown, tables: string[], saver: RegExp, option: RegExp): void {
  expect(error).toBeInstanceOf(ExistingTablesError);
  expect(error).toBeInstanceOf(MigrationError);
  const { message } = error as ExistingTablesError;
  expect((error as ExistingTablesError).tables).toEqual(tables);
  expect(message).toMatch(saver);
  expect(message).toMatch(/Nothing was changed/);
  expect(message).toMatch(/checkpointTables\(\{ prefix \}\)/);
  expect(message).toMatch(option);
  expect(message).toMatch(/already exists? in the (current schema|database)/);
  // Our own explanation, not the database's error from a half-run migration.
  expect(message).not.toMatch(/Failed query|relation|SQLITE_ERROR|ER_TABLE_EXISTS/i);
}

describe("setup() beside LangGraph's official savers", () => {
  it("PostgreSQL: stops before touching the official saver's tables, which keep working", async () => {
    const url = await freshDatabaseUrl("postgres");
    const official = PostgresSaver.fromConnString(url);
    await official.setup();
    const checkpoint = emptyCheckpoint();
    await official.put(config, checkpoint, metadata, {});
    try {
      const error = await setupError(url);
      expectExistingTables(
        error,
        ["checkpoints", "checkpoint_blobs", "checkpoint_writes"],
        /@langchain\/langgraph-checkpoint-postgres/,
        /PostgreSQL schema of their own/,
      );
      // Nothing of ours was created: no migrations table, no partition.
      const client = postgres(url, { max: 1, onnotice: () => {} });
      const tables = await client`select table_name from information_schema.tables where table_schema = 'public'`;
      await client.end();
      expect(tables.map((row) => row.table_name).sort()).toEqual([
        "checkpoint_blobs",
        "checkpoint_migrations",
        "checkpoint_writes",
        "checkpoints",
      ]);
      expect((await official.getTuple(config))?.checkpoint.id).toBe(checkpoint.id);
    } finally {
      await official.end();
    }
  });

  it("SQLite: stops on the official saver's checkpoints table and leaves its rows", async () => {
    const file = await freshDatabaseUrl("sqlite");
    const official = SqliteSaver.fromConnString(file);
    const checkpoint = emptyCheckpoint();
    await official.put(config, checkpoint, metadata);
    try {
      const error = await setupError(file);
      expectExistingTables(error, ["checkpoints"], /@langchain\/langgraph-checkpoint-sqlite/, /another database/);
      const db = new Database(file, { readonly: true });
      const tables = db.prepare("select name from sqlite_master where type = 'table' order by name").all();
      db.close();
      expect(tables).toEqual([{ name: "checkpoints" }, { name: "writes" }]);
      expect((await official.getTuple(config))?.checkpoint.id).toBe(checkpoint.id);
    } finally {
      official.db.close();
    }
  });

  it("MariaDB: an application's own checkpoints table stops it the same way", async () => {
    const url = await freshDatabaseUrl("mysql");
    const connection = await mysql.createConnection(url);
    try {
      await connection.query("create table checkpoints (id int primary key, note text)");
      await connection.query("insert into checkpoints values (1, 'the application''s row')");
      const error = await setupError(url);
      expectExistingTables(error, ["checkpoints"], /not created by this saver/, /another database/);
      const [tables] = await connection.query(
        "select table_name as name from information_schema.tables where table_schema = database()",
      );
      expect(tables).toEqual([{ name: "checkpoints" }]);
      const [rows] = await connection.query("select * from checkpoints");
      expect(rows).toEqual([{ id: 1, note: "the application's row" }]);
    } finally {
      await connection.end();
    }
  });

  it("still upgrades a database where our own migrations are recorded", async () => {
    const url = await freshDatabaseUrl("sqlite");
    const first = await DrizzleSaver.fromUrl(url);
    await first.setup();
    await first.close();
    const again = await DrizzleSaver.fromUrl(url);
    await expect(again.setup()).resolves.toEqual([]);
    await again.close();
  });
});
