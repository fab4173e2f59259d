/**
 * The savers under test, each over its own database on the shared servers, with
 * what the benchmark needs besides the saver API: bytes on disk, row counts, and a
 * bulk copy of checkpoint rows (to reach the large size without hours of puts).
 */

import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BaseCheckpointSaver, MemorySaver } from "@langchain/langgraph-checkpoint";
import { PostgresSaver } from "@langchain/langgraph-checkpoint-postgres";
import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import Database from "better-sqlite3";
import type { Logger } from "drizzle-orm";
import { drizzle as drizzleSqlite } from "drizzle-orm/better-sqlite3";
import { drizzle as drizzleMysql } from "drizzle-orm/mysql2";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import mysql from "mysql2/promise";
import postgres from "postgres";
import type { DrizzleSaverOptions } from "../src/index.js";
import { POSTGRES_OPTIONS } from "../src/wiring/connect.js";
import { shipped } from "./shipped.js";

const { DrizzleSaver } = shipped;

export type Family = "postgres" | "mysql" | "sqlite" | "memory";

export interface SizeReport {
  /** Bytes per table, its indexes and TOAST/overflow included. */
  tables: Record<string, number>;
  total: number;
  method: string;
}

export interface Subject {
  name: string;
  label: string;
  family: Family;
  official: boolean;
  saver: BaseCheckpointSaver;
  /** Bytes on disk of the saver's tables (undefined for MemorySaver). */
  size?(): Promise<SizeReport>;
  /** Rows in the checkpoints table. */
  count?(): Promise<number>;
  /**
   * Copies every original thread (written through the saver) once per copy number in
   * [from, to], with all its rows in every table of the saver (checkpoints, blobs,
   * writes): as thread `<thread>-c<n>` owned by user `u<user + n * userStride>`, with
   * checkpoint ids made unique (4 hex digits of n in their node part). Every other
   * column is copied as the saver stored it. Returns the checkpoints inserted.
   */
  bulkCopy?(from: number, to: number, userStride: number): Promise<number>;
  /** Frees what the subject holds in this process (MemorySaver's maps) once it is no longer measured. */
  release?(): Promise<void>;
  /** Refreshes planner statistics after a bulk copy (what autovacuum / InnoDB would do). */
  analyze?(): Promise<void>;
  /**
   * The plan of the cross-thread filter query: `run` performs the filtered `list`; our
   * savers record the SQL it sent and explain exactly that, the official ones explain
   * their (fixed) query shape.
   */
  explainFilter?(filter: { user: string; step: number }, run: () => Promise<unknown>): Promise<string>;
  /** Our savers: the plan of the first query `run` sends (e.g. a getTuple), as executed. */
  explainQuery?(run: () => Promise<unknown>): Promise<string>;
  /** Our savers: the statements `run` sends, as drizzle's logger sees them. */
  recordQueries?(run: () => Promise<unknown>): Promise<CapturedQuery[]>;
  /**
   * CPU time (ms) used so far by the database server processes serving this saver
   * (PostgreSQL backends connected to its database); NaN where they cannot be told apart.
   */
  serverCpuMs?(): Promise<number>;
  close(): Promise<void>;
}

export interface Servers {
  pgUrl?: string;
  mysqlUrl?: string;
}

export interface CapturedQuery {
  query: string;
  params: unknown[];
}

/** A drizzle logger that records the queries sent while `record` runs. */
class QueryCapture implements Logger {
  private recording: CapturedQuery[] | undefined;

  logQuery(query: string, params: unknown[]): void {
    this.recording?.push({ query, params });
  }

  /** The first query `run` sent (the checkpoint selection of a `list`). */
  async first(run: () => Promise<unknown>): Promise<CapturedQuery> {
    const [query] = await this.all(run);
    if (!query) throw new Error("no query was recorded");
    return query;
  }

  /** Every query `run` sent. */
  async all(run: () => Promise<unknown>): Promise<CapturedQuery[]> {
    const recording: CapturedQuery[] = [];
    this.recording = recording;
    try {
      await run();
      return recording;
    } finally {
      this.recording = undefined;
    }
  }
}

/** Databases and files created for one run; all removed by `drop()` unless kept. */
export class Workspace {
  readonly tag = `bench_${randomBytes(4).toString("hex")}`;
  private readonly pgDatabases: string[] = [];
  private readonly mysqlDatabases: string[] = [];
  private sqliteDir: string | undefined;

  constructor(private readonly servers: Servers) {}

  async pgDatabase(suffix: string): Promise<string> {
    const base = this.servers.pgUrl;
    if (!base) throw new Error("PG_URL is not set");
    const name = `${this.tag}_${suffix}`;
    const admin = postgres(base, { max: 1, onnotice: () => {} });
    try {
      await admin.unsafe(`create database ${name}`);
    } finally {
      await admin.end();
    }
    this.pgDatabases.push(name);
    const url = new URL(base);
    url.pathname = `/${name}`;
    return url.toString();
  }

  async mysqlDatabase(suffix: string): Promise<string> {
    const base = this.servers.mysqlUrl;
    if (!base) throw new Error("MYSQL_URL is not set");
    const name = `${this.tag}_${suffix}`;
    const admin = await mysql.createConnection(base);
    try {
      await admin.query(`create database ${name} character set utf8mb4`);
    } finally {
      await admin.end();
    }
    this.mysqlDatabases.push(name);
    const url = new URL(base);
    url.pathname = `/${name}`;
    return url.toString();
  }

  sqliteFile(name: string): string {
    this.sqliteDir ??= mkdtempSync(join(tmpdir(), `${this.tag}-`));
    return join(this.sqliteDir, `${name}.db`);
  }

  describe(): string {
    return [
      ...this.pgDatabases.map((name) => `postgres:${name}`),
      ...this.mysqlDatabases.map((name) => `mysql:${name}`),
      ...(this.sqliteDir ? [this.sqliteDir] : []),
    ].join(", ");
  }

  /** Drops everything created; a server that cannot be reached does not stop the rest from being removed. */
  async drop(): Promise<void> {
    const errors: string[] = [];
    if (this.pgDatabases.length > 0 && this.servers.pgUrl) {
      try {
        const admin = postgres(this.servers.pgUrl, { max: 1, onnotice: () => {} });
        try {
          for (const name of [...this.pgDatabases]) {
            await admin.unsafe(`drop database if exists ${name} with (force)`);
            this.pgDatabases.splice(this.pgDatabases.indexOf(name), 1);
          }
        } finally {
          await admin.end();
        }
      } catch (error) {
        errors.push(`PostgreSQL: ${(error as Error).message} (left: ${this.pgDatabases.join(", ")})`);
      }
    }
    if (this.mysqlDatabases.length > 0 && this.servers.mysqlUrl) {
      try {
        const admin = await mysql.createConnection(this.servers.mysqlUrl);
        try {
          for (const name of [...this.mysqlDatabases]) {
            await admin.query(`drop database if exists ${name}`);
            this.mysqlDatabases.splice(this.mysqlDatabases.indexOf(name), 1);
          }
        } finally {
          await admin.end();
        }
      } catch (error) {
        errors.push(`MySQL: ${(error as Error).message} (left: ${this.mysqlDatabases.join(", ")})`);
      }
    }
    if (this.sqliteDir) rmSync(this.sqliteDir, { recursive: true, force: true });
    this.sqliteDir = undefined;
    if (errors.length > 0) throw new Error(`could not drop every benchmark database: ${errors.join("; ")}`);
  }
}

/**
 * How a dialect writes a bulk copy. `c.n` is the copy number; the integers inlined
 * into the SQL are generated here, never input.
 */
interface CopyDialect {
  quote(name: string): string;
  /** A row source named `c` with one integer column `n`, for the copy numbers. */
  numbers(from: number, to: number): string;
  threadId: string;
  checkpointId(column: string): string;
  metadata(userStride: number): string;
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** Rows written through the saver; copies are named "<thread>-c<n>". */
const ORIGINALS = `t.thread_id not like '%-%'`;

/** `insert into <table> select <each column, rewritten where needed> from <table> cross join <copy numbers>`. */
function copyStatement(
  table: string,
  columns: string[],
  dialect: CopyDialect,
  from: number,
  to: number,
  stride: number,
) {
  const select = columns.map((column) => {
    switch (column) {
      case "thread_id":
        return dialect.threadId;
      case "checkpoint_id":
      case "parent_checkpoint_id":
        return dialect.checkpointId(`t.${dialect.quote(column)}`);
      case "metadata":
        return dialect.metadata(stride);
      default:
        return `t.${dialect.quote(column)}`;
    }
  });
  return `insert into ${dialect.quote(table)} (${columns.map(dialect.quote).join(", ")})
    select ${select.join(", ")} from ${dialect.quote(table)} as t cross join ${dialect.numbers(from, to)}
    where ${ORIGINALS}`;
}

// ---------------------------------------------------------------- PostgreSQL

type Sql = postgres.Sql;

/**
 * A one-connection client for chores and EXPLAIN. JSON parameters pass through as
 * text, as drizzle configures its own postgres.js clients, so the captured queries
 * of our saver explain with the same parameter values.
 */
function pgAdmin(url: string): Sql {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  const passThrough = (value: unknown) => value;
  sql.options.serializers[114] = passThrough;
  sql.options.serializers[3802] = passThrough;
  return sql;
}

async function pgExplain(admin: Sql, query: string, params: unknown[]): Promise<string> {
  const rows = await admin.unsafe<Record<string, string>[]>(
    `explain (analyze, buffers, costs off, timing off) ${query}`,
    params as postgres.ParameterOrJSON<never>[],
  );
  return rows.map((row) => Object.values(row)[0]).join("\n");
}

let clockTicks: number | undefined;

/** utime + stime of a process in ms, from /proc (Linux); undefined once it is gone. */
function processCpuMs(pid: number): number | undefined {
  try {
    clockTicks ??= Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may contain spaces) start at field 3.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) / clockTicks) * 1000;
  } catch {
    return undefined;
  }
}

/** Server processes can be read from /proc only when the server runs on this machine. */
function isLocal(url: string): boolean {
  return ["127.0.0.1", "localhost", "[::1]", ""].includes(new URL(url).hostname);
}

const PG_COPY: CopyDialect = {
  quote: (name) => `"${name}"`,
  numbers: (from, to) => `generate_series(${from}, ${to}) as c(n)`,
  threadId: `t.thread_id || '-c' || c.n`,
  checkpointId: (column) => `overlay(${column} placing lpad(to_hex(c.n), 4, '0') from 25 for 4)`,
  metadata: (stride) =>
    `jsonb_set(t.metadata, '{user}', to_jsonb('u' || (substr(t.metadata->>'user', 2)::int + c.n * ${stride})::text))`,
};

function pgHelpers(admin: Sql, tables: string[], local: boolean) {
  const seen = new Map<number, number>();
  return {
    async serverCpuMs(): Promise<number> {
      if (!local) return Number.NaN;
      const backends = await admin.unsafe<{ pid: number }[]>(
        `select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`,
      );
      for (const { pid } of backends) {
        const ms = processCpuMs(pid);
        if (ms !== undefined) seen.set(pid, ms);
      }
      return [...seen.values()].reduce((a, b) => a + b, 0);
    },
    async size(): Promise<SizeReport> {
      const result: Record<string, number> = {};
      for (const table of tables) {
        // Partitioned tables: sum the leaves (each with its indexes and TOAST); a plain table is its own leaf.
        // pg_partition_tree lists nothing for a plain table: then the table is measured itself.
        const [row] = await admin.unsafe<{ bytes: string }[]>(
          `select coalesce(
             (select sum(pg_total_relation_size(relid)) from pg_partition_tree($1::regclass) where isleaf),
             pg_total_relation_size($1::regclass))::text as bytes`,
          [table],
        );
        result[table] = Number(row.bytes);
      }
      return {
        tables: result,
        total: Object.values(result).reduce((a, b) => a + b, 0),
        method: "sum of pg_total_relation_size over pg_partition_tree leaves",
      };
    },
    async count(): Promise<number> {
      const [row] = await admin.unsafe<{ n: string }[]>(`select count(*)::text as n from checkpoints`);
      return Number(row.n);
    },
    async bulkCopy(from: number, to: number, stride: number): Promise<number> {
      let inserted = 0;
      for (const table of tables) {
        const columns = (
          await admin.unsafe<{ name: string }[]>(
            `select attname as name from pg_attribute
             where attrelid = $1::regclass and attnum > 0 and not attisdropped and attgenerated = ''
             order by attnum`,
            [table],
          )
        ).map((row) => row.name);
        const result = await admin.unsafe(copyStatement(table, columns, PG_COPY, from, to, stride));
        if (table === "checkpoints") inserted = result.count;
      }
      return inserted;
    },
    async analyze(): Promise<void> {
      // VACUUM too: after the bulk copy's inserts, autovacuum would otherwise vacuum each
      // table (partition) during the reads, and every vacuum invalidates the prepared
      // statements' cached plans on it: replans of several ms inside the samples.
      await admin.unsafe(`vacuum analyze`);
    },
  };
}

/** The key of the encrypted subjects (encryption at rest, docs/encryption.md): random per run. */
const BENCH_ENCRYPTION = { keys: { bench: randomBytes(32) }, activeKeyId: "bench" };

/** Encryption of an "ours" subject: off, on, or on without the memory of opened values (`cacheBytes: 0`). */
export type Encrypted = boolean | "no-cache";

/** The options of an "ours" subject, with encryption on for the "-enc" ones. */
function subjectOptions(encrypted: Encrypted): DrizzleSaverOptions {
  if (!encrypted) return oursOptions();
  const encryption = encrypted === "no-cache" ? { ...BENCH_ENCRYPTION, cacheBytes: 0 } : BENCH_ENCRYPTION;
  return { ...oursOptions(), encryption };
}

/** The suffix of an "ours" subject's name and database. */
function encryptedSuffix(encrypted: Encrypted): string {
  return !encrypted ? "" : encrypted === "no-cache" ? "-enc-nocache" : "-enc";
}

export async function oursPostgres(workspace: Workspace, encrypted: Encrypted = false): Promise<Subject> {
  const url = await workspace.pgDatabase(`ours${encryptedSuffix(encrypted).replaceAll("-", "_")}`);
  // What DrizzleSaver.fromUrl opens, plus a logger that lets the report explain the filter query.
  const client = postgres(url, POSTGRES_OPTIONS);
  const capture = new QueryCapture();
  const saver = new DrizzleSaver(drizzlePostgres(client, { logger: capture }), subjectOptions(encrypted));
  await saver.setup();
  const admin = pgAdmin(url);
  const explainQuery = async (run: () => Promise<unknown>) => {
    const { query, params } = await capture.first(run);
    return pgExplain(admin, query, params);
  };
  return {
    name: `ours-pg${encryptedSuffix(encrypted)}`,
    label: `DrizzleSaver, PostgreSQL (postgres.js)${encrypted ? ", encrypted" : ""}${encrypted === "no-cache" ? " (cacheBytes 0)" : ""}`,
    family: "postgres",
    official: false,
    saver,
    ...pgHelpers(admin, ["checkpoints", "checkpoint_blobs", "checkpoint_writes"], isLocal(url)),
    explainFilter: (_filter, run) => explainQuery(run),
    explainQuery,
    recordQueries: (run) => capture.all(run),
    async close() {
      await client.end();
      await admin.end();
    },
  };
}

export async function officialPostgres(workspace: Workspace): Promise<Subject> {
  const url = await workspace.pgDatabase("official");
  const saver = PostgresSaver.fromConnString(url);
  await saver.setup();
  const admin = pgAdmin(url);
  return {
    name: "official-pg",
    label: "PostgresSaver (official, node-postgres)",
    family: "postgres",
    official: true,
    saver,
    ...pgHelpers(admin, ["checkpoints", "checkpoint_blobs", "checkpoint_writes"], isLocal(url)),
    async explainFilter(filter) {
      // Its list(): SELECT_SQL (per-row subqueries for blobs and writes) WHERE metadata @> $1 ORDER BY checkpoint_id DESC LIMIT n.
      return pgExplain(
        admin,
        `select thread_id, checkpoint_id from checkpoints where metadata @> $1 order by checkpoint_id desc limit 5`,
        [JSON.stringify(filter)],
      );
    },
    async close() {
      await saver.end();
      await admin.end();
    },
  };
}

// ---------------------------------------------------------------- MySQL / MariaDB

const MYSQL_COPY: CopyDialect = {
  quote: (name) => `\`${name}\``,
  numbers: (from, to) => `json_table('${JSON.stringify(range(from, to))}', '$[*]' columns (n int path '$')) as c`,
  threadId: `concat(t.thread_id, '-c', c.n)`,
  checkpointId: (column) => `concat(substr(${column}, 1, 24), lpad(lower(hex(c.n)), 4, '0'), substr(${column}, 29))`,
  metadata: (stride) =>
    `json_set(t.metadata, '$.user', concat('u', cast(substr(json_unquote(json_extract(t.metadata, '$.user')), 2) as unsigned) + c.n * ${stride}))`,
};

export async function oursMysql(workspace: Workspace): Promise<Subject> {
  const url = await workspace.mysqlDatabase("ours");
  // What DrizzleSaver.fromUrl opens, plus a logger that lets the report explain the filter query.
  const pool = mysql.createPool({ uri: url, charset: "utf8mb4", supportBigNumbers: true });
  const capture = new QueryCapture();
  const saver = new DrizzleSaver(drizzleMysql(pool, { logger: capture }), oursOptions());
  await saver.setup();
  const admin = await mysql.createConnection({ uri: url, charset: "utf8mb4" });
  const [[{ version }]] = await admin.query<mysql.RowDataPacket[]>(`select version() as version`);
  const mariadb = String(version).toLowerCase().includes("mariadb");
  const explainQuery = async (run: () => Promise<unknown>) => {
    const { query, params } = await capture.first(run);
    // MariaDB: ANALYZE <select> runs it and reports rows read; MySQL 8: EXPLAIN ANALYZE.
    const [rows] = await admin.query<mysql.RowDataPacket[]>(
      `${mariadb ? "analyze" : "explain analyze"} ${query}`,
      params,
    );
    return rows.map((row) => JSON.stringify(row)).join("\n");
  };
  const tables = ["checkpoints", "checkpoint_blobs", "checkpoint_writes"];
  return {
    name: "ours-mysql",
    label: "DrizzleSaver, MariaDB (mysql2)",
    family: "mysql",
    official: false,
    saver,
    async size() {
      await admin.query(`analyze table ${tables.join(", ")}`);
      const [rows] = await admin.query<mysql.RowDataPacket[]>(
        `select table_name as name, data_length + index_length as bytes from information_schema.tables
         where table_schema = database() and table_name in (?)`,
        [tables],
      );
      const result: Record<string, number> = {};
      for (const row of rows) result[String(row.name)] = Number(row.bytes);
      return {
        tables: result,
        total: Object.values(result).reduce((a, b) => a + b, 0),
        method: "information_schema data_length + index_length after ANALYZE TABLE",
      };
    },
    async count() {
      const [rows] = await admin.query<mysql.RowDataPacket[]>(`select count(*) as n from checkpoints`);
      return Number(rows[0].n);
    },
    async bulkCopy(from, to, stride) {
      let inserted = 0;
      for (const table of tables) {
        const [columnRows] = await admin.query<mysql.RowDataPacket[]>(
          `select column_name as name from information_schema.columns
           where table_schema = database() and table_name = ? and extra not like '%GENERATED%'
           order by ordinal_position`,
          [table],
        );
        const columns = columnRows.map((row) => String(row.name));
        const [result] = await admin.query<mysql.ResultSetHeader>(
          copyStatement(table, columns, MYSQL_COPY, from, to, stride),
        );
        if (table === "checkpoints") inserted = result.affectedRows;
      }
      return inserted;
    },
    async analyze() {
      await admin.query(`analyze table checkpoints`);
    },
    explainFilter: (_filter, run) => explainQuery(run),
    explainQuery,
    recordQueries: (run) => capture.all(run),
    async close() {
      await pool.end();
      await admin.end();
    },
  };
}

// ---------------------------------------------------------------- SQLite

/** Both SQLite savers get the same connection settings: those `DrizzleSaver.fromUrl` applies. */
function openSqlite(path: string): Database.Database {
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma("busy_timeout = 10000");
  db.pragma("synchronous = NORMAL");
  return db;
}

function sqliteCopy(metadataIsBlob: boolean): CopyDialect {
  return {
    quote: (name) => `"${name}"`,
    numbers: (from, to) => `(select value as n from json_each('${JSON.stringify(range(from, to))}')) as c`,
    threadId: `t.thread_id || '-c' || c.n`,
    checkpointId: (column) => `substr(${column}, 1, 24) || printf('%04x', c.n) || substr(${column}, 29)`,
    metadata(stride) {
      const json = `json_set(cast(t.metadata as text), '$.user', 'u' || (cast(substr(json_extract(cast(t.metadata as text), '$.user'), 2) as integer) + c.n * ${stride}))`;
      // The official saver stores metadata as a JSON blob, ours as JSON text: each keeps its own.
      return metadataIsBlob ? `cast(${json} as blob)` : json;
    },
  };
}

function sqliteHelpers(db: Database.Database, tables: string[], metadataIsBlob: boolean) {
  return {
    async size(): Promise<SizeReport> {
      db.pragma("wal_checkpoint(TRUNCATE)");
      const owners = new Map(
        db
          .prepare<[], { name: string; tbl_name: string }>(`select name, tbl_name from sqlite_schema`)
          .all()
          .map((row) => [row.name, row.tbl_name]),
      );
      const result: Record<string, number> = Object.fromEntries(tables.map((table) => [table, 0]));
      for (const row of db
        .prepare<[], { name: string; bytes: number }>(`select name, sum(pgsize) as bytes from dbstat group by name`)
        .all()) {
        const owner = owners.get(row.name);
        if (owner !== undefined && owner in result) result[owner] += row.bytes;
      }
      return {
        tables: result,
        total: Object.values(result).reduce((a, b) => a + b, 0),
        method: "dbstat pages of each table and its indexes",
      };
    },
    async count(): Promise<number> {
      return db.prepare<[], { n: number }>(`select count(*) as n from checkpoints`).get()?.n ?? 0;
    },
    async bulkCopy(from: number, to: number, stride: number): Promise<number> {
      const dialect = sqliteCopy(metadataIsBlob);
      const copy = db.transaction(() => {
        let inserted = 0;
        for (const table of tables) {
          const columns = db
            .prepare<[string], { name: string; hidden: number }>(`select name, hidden from pragma_table_xinfo(?)`)
            .all(table)
            .filter((column) => column.hidden === 0)
            .map((column) => column.name);
          const { changes } = db.prepare(copyStatement(table, columns, dialect, from, to, stride)).run();
          if (table === "checkpoints") inserted = changes;
        }
        return inserted;
      });
      return copy();
    },
    explainSql(query: string, params: unknown[]): string {
      return db
        .prepare<unknown[], { detail: string }>(`explain query plan ${query}`)
        .all(...params)
        .map((row) => row.detail)
        .join("\n");
    },
  };
}

/**
 * Options of our savers: BENCH_INCREMENTAL sets `incrementalValues` (0 stores every
 * value whole, as before incremental values), to measure what that feature costs.
 */
function oursOptions(): DrizzleSaverOptions {
  const incremental = process.env.BENCH_INCREMENTAL;
  // Empty counts as unset (Number("") would be 0, values stored whole).
  return incremental === undefined || incremental === "" ? {} : { incrementalValues: Number(incremental) };
}

export async function oursSqlite(workspace: Workspace, encrypted: Encrypted = false): Promise<Subject> {
  const db = openSqlite(workspace.sqliteFile(`ours${encryptedSuffix(encrypted)}`));
  const capture = new QueryCapture();
  const saver = new DrizzleSaver(drizzleSqlite(db, { logger: capture }), subjectOptions(encrypted));
  await saver.setup();
  const helpers = sqliteHelpers(db, ["checkpoints", "checkpoint_blobs", "checkpoint_writes"], false);
  const explainQuery = async (run: () => Promise<unknown>) => {
    const { query, params } = await capture.first(run);
    return helpers.explainSql(query, params);
  };
  return {
    name: `ours-sqlite${encryptedSuffix(encrypted)}`,
    label: `DrizzleSaver, SQLite (better-sqlite3)${encrypted ? ", encrypted" : ""}${encrypted === "no-cache" ? " (cacheBytes 0)" : ""}`,
    family: "sqlite",
    official: false,
    saver,
    ...helpers,
    explainFilter: (_filter, run) => explainQuery(run),
    explainQuery,
    recordQueries: (run) => capture.all(run),
    async close() {
      db.close();
    },
  };
}

export async function officialSqlite(workspace: Workspace): Promise<Subject> {
  const db = openSqlite(workspace.sqliteFile("official"));
  const saver = new SqliteSaver(db);
  // The saver creates its tables lazily (setup() is protected): any read creates them.
  await saver.getTuple({ configurable: { thread_id: "setup" } });
  const helpers = sqliteHelpers(db, ["checkpoints", "writes"], true);
  return {
    name: "official-sqlite",
    label: "SqliteSaver (official, better-sqlite3)",
    family: "sqlite",
    official: true,
    saver,
    ...helpers,
    async explainFilter(filter) {
      // Its list(): WHERE jsonb(CAST(metadata AS TEXT))->'$.key' = '<json>' for each key, ORDER BY checkpoint_id DESC LIMIT n.
      const entries = Object.entries(filter);
      return helpers.explainSql(
        `select thread_id, checkpoint_id from checkpoints where ${entries
          .map(() => "jsonb(CAST(metadata AS TEXT))->? = ?")
          .join(" and ")} order by checkpoint_id desc limit 5`,
        entries.flatMap(([key, value]) => [`$.${key}`, JSON.stringify(value)]),
      );
    },
    async close() {
      db.close();
    },
  };
}

// ---------------------------------------------------------------- memory

export async function memory(): Promise<Subject> {
  const saver = new MemorySaver();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  const hex = (n: number) => n.toString(16).padStart(4, "0");
  const newId = (id: string, n: number) => `${id.slice(0, 24)}${hex(n)}${id.slice(28)}`;
  return {
    name: "memory",
    label: "MemorySaver (reference, in process)",
    family: "memory",
    official: true,
    saver,
    async release() {
      saver.storage = {};
      saver.writes = {};
    },
    async count() {
      let n = 0;
      for (const byNs of Object.values(saver.storage))
        for (const byId of Object.values(byNs)) n += Object.keys(byId).length;
      return n;
    },
    /** The same copies as the SQL ones, made in its two maps (checkpoint bytes are shared, not duplicated). */
    async bulkCopy(from, to, stride) {
      const originals = Object.keys(saver.storage).filter((thread) => !thread.includes("-"));
      const writeKeys = Object.keys(saver.writes);
      let inserted = 0;
      for (let n = from; n <= to; n++) {
        for (const thread of originals) {
          const copy: (typeof saver.storage)[string] = Object.create(null);
          for (const [ns, byId] of Object.entries(saver.storage[thread])) {
            copy[ns] = Object.create(null);
            for (const [id, [checkpoint, metadata, parent]] of Object.entries(byId)) {
              const meta = JSON.parse(decoder.decode(metadata)) as { user: string };
              meta.user = `u${Number(meta.user.slice(1)) + n * stride}`;
              copy[ns][newId(id, n)] = [checkpoint, encoder.encode(JSON.stringify(meta)), parent && newId(parent, n)];
              inserted++;
            }
          }
          saver.storage[`${thread}-c${n}`] = copy;
        }
        for (const key of writeKeys) {
          const [thread, ns, id] = JSON.parse(key) as [string, string, string];
          if (thread.includes("-")) continue;
          saver.writes[JSON.stringify([`${thread}-c${n}`, ns, newId(id, n)])] = { ...saver.writes[key] };
        }
      }
      return inserted;
    },
    async close() {},
  };
}

export const SUBJECTS = {
  "ours-pg": (workspace: Workspace) => oursPostgres(workspace),
  "official-pg": officialPostgres,
  "ours-mysql": oursMysql,
  "ours-sqlite": (workspace: Workspace) => oursSqlite(workspace),
  "ours-pg-enc": (workspace: Workspace) => oursPostgres(workspace, true),
  "ours-sqlite-enc": (workspace: Workspace) => oursSqlite(workspace, true),
  "official-sqlite": officialSqlite,
  memory: (_workspace: Workspace) => memory(),
} as const;

export type SubjectName = keyof typeof SUBJECTS;
export const SUBJECT_NAMES = Object.keys(SUBJECTS) as SubjectName[];
