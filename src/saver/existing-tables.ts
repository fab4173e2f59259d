import { type SQL, sql } from "drizzle-orm";
import type { Dialect, MigrationOptions } from "../dialects/dialect.js";
import type { Runner } from "../drivers/executor.js";
import { ExistingTablesError } from "../errors.js";
import { journal } from "./migrate.js";

/** The tables our first migration creates, in the current schema or database. */
const OUR_TABLES = ["checkpoints", "checkpoint_blobs", "checkpoint_writes"];

/** A table only LangGraph's official savers create, by dialect, with the saver's package. */
const OFFICIAL_MARKERS: Record<string, { table: string; saver: string }> = {
  postgres: { table: "checkpoint_migrations", saver: "@langchain/langgraph-checkpoint-postgres" },
  sqlite: { table: "writes", saver: "@langchain/langgraph-checkpoint-sqlite" },
};

/**
 * Which of `names` are tables where an unqualified CREATE TABLE would put ours (on
 * PostgreSQL, in `schema` when given). Runs on the migration's own connection: on
 * SQLite another one would wait for its write lock.
 */
async function existingTables(tx: Runner, dialect: string, names: string[], schema?: string): Promise<string[]> {
  const list = sql.join(
    names.map((name) => sql`${name}`),
    sql`, `,
  );
  const query: SQL =
    dialect === "postgres"
      ? sql`select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
            where n.nspname = ${schema === undefined ? sql`current_schema()` : sql`${schema}`} and c.relname in (${list})`
      : dialect === "mysql"
        ? sql`select table_name as name from information_schema.tables
              where table_schema = database() and table_name in (${list})`
        : sql`select name from sqlite_master where type = 'table' and name in (${list})`;
  return (await tx.all(query)).map((row) => String(row.name));
}

/**
 * Before the first migration, under the migrations lock: tables of our names that our
 * migrations table does not account for belong to someone else, most likely LangGraph's
 * official saver. Creating ours would fail half-way with "already exists" (and on MySQL
 * leave the first tables behind), so stop before changing anything.
 */
export async function refuseExistingTables(tx: Runner, dialect: Dialect, options: MigrationOptions): Promise<void> {
  const ours = await existingTables(tx, dialect.name, [options.migrationsTable], options.migrationsSchema);
  if (ours.length > 0) {
    const [recorded] = await tx.all(sql`select count(*) as n from ${await dialect.migrationsTable(options)}`);
    if (Number(recorded.n) > 0) return;
  }
  const marker = OFFICIAL_MARKERS[dialect.name];
  const found = await existingTables(tx, dialect.name, [...OUR_TABLES, ...(marker ? [marker.table] : [])]);
  const clashing = OUR_TABLES.filter((name) => found.includes(name));
  if (clashing.length === 0) return;
  const plural = clashing.length > 1;
  const owner =
    marker && found.includes(marker.table)
      ? `${plural ? "they look" : "it looks"} like a table of LangGraph's official saver (${marker.saver})`
      : `${plural ? "they were" : "it was"} not created by this saver`;
  const where = dialect.name === "postgres" ? "the current schema" : "the database";
  const tables = clashing.map((n) => `"${n}"`).join(", ");
  const exist = clashing.length > 1 ? `tables ${tables} already exist` : `table ${tables} already exists`;
  const explanation =
    `the ${exist} in ${where}, and ${options.migrationsTable} records none of our migrations: ${owner}. ` +
    "Nothing was changed. " +
    "To keep both, give ours other names: define them with checkpointTables({ prefix }) in your schema and pass them " +
    "as the `tables` option (README, recipe A)" +
    (dialect.name === "postgres"
      ? ", or let setup() create them in a PostgreSQL schema of their own (a search_path leading to it, and migrationsSchema)."
      : ", or use another database.");
  const [first] = journal(options.migrationsFolder);
  throw new ExistingTablesError(clashing, explanation, first);
}
