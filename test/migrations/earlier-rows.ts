/**
 * Data for upgrade tests. Today's saver writes tables an earlier release did not have
 * (checkpoint_threads), so it cannot write into a database left at that release's
 * schema. It writes into a scratch place beside it instead (a PostgreSQL schema, a
 * MariaDB database, an attached SQLite file), and the rows of the tables that release
 * had are copied over: the rows the saver of that time wrote, column for column.
 */
import { randomBytes } from "node:crypto";
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import mysql, { type Pool } from "mysql2/promise";
import type { Sql } from "postgres";

const BASE_COLUMNS: Record<string, string[]> = {
  checkpoints: [
    "thread_id",
    "checkpoint_ns",
    "checkpoint_id",
    "parent_checkpoint_id",
    "checkpoint_type",
    "checkpoint",
    "channel_versions",
    "metadata",
    "created_at",
  ],
  checkpoint_blobs: ["thread_id", "checkpoint_ns", "channel", "version", "type", "blob"],
  checkpoint_writes: [
    "thread_id",
    "checkpoint_ns",
    "checkpoint_id",
    "task_id",
    "idx",
    "channel",
    "type",
    "blob",
    "task_path",
  ],
};

/** MySQL keys hashes of long text beside it. */
const MYSQL_EXTRA: Record<string, string[]> = {
  checkpoints: ["ns_hash"],
  checkpoint_blobs: ["ns_hash"],
  checkpoint_writes: ["ns_hash", "task_hash"],
};

/** Copies the three base tables' rows from schema `from` into the search path's tables. */
export async function copyPgRows(client: Sql, from: string): Promise<void> {
  for (const [table, columns] of Object.entries(BASE_COLUMNS)) {
    const list = columns.map((c) => `"${c}"`).join(", ");
    await client.unsafe(`insert into "${table}" (${list}) select ${list} from "${from}"."${table}"`);
  }
}

/**
 * Copies the three base tables' rows from database `from` into the pool's database.
 * `release0000`: the target has 0000_init's columns (TIMESTAMP created_at, channel and
 * task_path in the database's character set), which the saver wrote as text in UTC.
 */
export async function copyMySqlRows(pool: Pool, from: string, release0000: boolean): Promise<void> {
  const connection = await pool.getConnection();
  try {
    await connection.query("set time_zone = '+00:00'");
    for (const [table, base] of Object.entries(BASE_COLUMNS)) {
      const columns = [...base, ...MYSQL_EXTRA[table]];
      const source = (column: string) => {
        if (!release0000) return `\`${column}\``;
        if (column === "created_at") return "from_unixtime(`created_at` / 1000)";
        if (table === "checkpoint_writes" && (column === "channel" || column === "task_path"))
          return `convert(\`${column}\` using utf8mb4)`;
        return `\`${column}\``;
      };
      await connection.query(
        `insert into \`${table}\` (${columns.map((c) => `\`${c}\``).join(", ")}) select ${columns.map(source).join(", ")} from \`${from}\`.\`${table}\``,
      );
    }
  } finally {
    connection.release();
  }
}

/** SQL copying the three base tables' rows from the attached database `from` (SQLite). */
export function sqliteCopyStatements(from: string): string[] {
  return Object.entries(BASE_COLUMNS).map(([table, columns]) => {
    const list = columns.map((c) => `"${c}"`).join(", ");
    return `insert into main."${table}" (${list}) select ${list} from "${from}"."${table}"`;
  });
}

/** The shipped migrations of a dialect cut after the first `count`, as an earlier release shipped them. */
export function releasedUpTo(dialect: string, count: number): string {
  const folder = mkdtempSync(join(tmpdir(), "migrations-"));
  cpSync(`migrations/${dialect}`, folder, { recursive: true });
  const journalPath = join(folder, "meta", "_journal.json");
  const journal = JSON.parse(readFileSync(journalPath, "utf8"));
  journal.entries = journal.entries.slice(0, count);
  writeFileSync(journalPath, JSON.stringify(journal));
  return folder;
}

/**
 * The shipped migrations of a dialect before the one whose tag ends with `migration`, as
 * the release before it shipped them: the folder, how many it holds, and the tags
 * `setup()` then applies (that migration and every later one).
 */
export function releasedBefore(
  dialect: string,
  migration: string,
): { folder: string; count: number; pending: string[] } {
  const journal = JSON.parse(readFileSync(join("migrations", dialect, "meta", "_journal.json"), "utf8"));
  const tags: string[] = journal.entries.map((entry: { tag: string }) => entry.tag);
  const count = tags.findIndex((tag) => tag.endsWith(migration));
  if (count < 0) throw new Error(`no migration ${migration} in migrations/${dialect}`);
  return { folder: releasedUpTo(dialect, count), count, pending: tags.slice(count) };
}

/** A utf8mb4 database beside the one under test, for today's saver to write in; see earlier-rows.ts. */
export async function seedMySqlDatabase(base: string): Promise<{ name: string; pool: mysql.Pool }> {
  const name = `t_${randomBytes(6).toString("hex")}_seed`;
  const admin = await mysql.createConnection(base);
  await admin.query(`create database ${name} character set utf8mb4`);
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  return { name, pool: mysql.createPool({ uri: url.toString(), charset: "utf8mb4", supportBigNumbers: true }) };
}
