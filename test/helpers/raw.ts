/**
 * A test database through its plain driver, without the saver: for states the saver never
 * writes (rows aged by hand, damaged values, rows an attacker inserted) and for counting
 * rows. The one way tests open a raw connection.
 */
import Database from "better-sqlite3";
import mysql from "mysql2/promise";
import postgres from "postgres";
import { type DialectName, mysqlIdsAsText } from "./databases.js";

export type RawRow = Record<string, unknown>;

export interface RawDatabase {
  readonly dialect: DialectName;
  /** Runs one statement with `?` placeholders (numbered on PostgreSQL); rows for a query, [] otherwise. */
  query(text: string, params?: readonly unknown[]): Promise<RawRow[]>;
  /** A quoted identifier. */
  id(name: string): string;
  close(): Promise<void>;
}

export interface RawOptions {
  /** MySQL: binary ids and text BLOBs read as strings, as the saver reads them (default true). */
  idsAsText?: boolean;
}

export async function openRaw(dialect: DialectName, url: string, options: RawOptions = {}): Promise<RawDatabase> {
  if (dialect === "postgres") {
    const client = postgres(url, { max: 2, onnotice: () => {} });
    return {
      dialect,
      async query(text, params = []) {
        let n = 0;
        const numbered = text.replace(/\?/g, () => `$${++n}`);
        return (await client.unsafe(numbered, params as postgres.ParameterOrJSON<never>[])) as unknown as RawRow[];
      },
      id: (name) => `"${name}"`,
      close: () => client.end(),
    };
  }
  if (dialect === "mysql") {
    // A pool: a connection a test dropped is replaced.
    const pool = mysql.createPool({
      uri: url,
      charset: "utf8mb4",
      supportBigNumbers: true,
      connectionLimit: 2,
      ...(options.idsAsText === false ? {} : mysqlIdsAsText),
    });
    return {
      dialect,
      async query(text, params = []) {
        const [rows] = await pool.query(text, params as unknown[]);
        return Array.isArray(rows) ? (rows as RawRow[]) : [];
      },
      id: (name) => `\`${name}\``,
      close: () => pool.end(),
    };
  }
  const sqlite = new Database(url);
  sqlite.pragma("busy_timeout = 10000");
  return {
    dialect,
    async query(text, params = []) {
      const statement = sqlite.prepare(text);
      if (statement.reader) return statement.all(...params) as RawRow[];
      statement.run(...params);
      return [];
    },
    id: (name) => `"${name}"`,
    async close() {
      sqlite.close();
    },
  };
}

/** Every column of every row of a table as text (bytes both as UTF-8 and as latin1, so no encoding hides a match). */
export async function dumpTable(raw: RawDatabase, table: string): Promise<string> {
  let dump = "";
  for (const row of await raw.query(`select * from ${raw.id(table)}`)) {
    for (const value of Object.values(row)) {
      if (value instanceof Uint8Array)
        dump += `${Buffer.from(value).toString("utf8")}|${Buffer.from(value).toString("latin1")}|`;
      else dump += `${typeof value === "object" ? JSON.stringify(value) : String(value)}|`;
    }
  }
  return dump;
}

/** One statement on a connection of its own, closed after it. */
export async function rawQuery(dialect: DialectName, url: string, statement: string): Promise<RawRow[]> {
  const raw = await openRaw(dialect, url);
  try {
    return await raw.query(statement);
  } finally {
    await raw.close();
  }
}

/** The deadlocks PostgreSQL broke in the database (count them once its connections closed: their counts are flushed then). */
export async function pgDeadlocks(url: string): Promise<number> {
  const [row] = await rawQuery(
    "postgres",
    url,
    "select deadlocks from pg_stat_database where datname = current_database()",
  );
  return Number(row.deadlocks);
}
