/**
 * Stops the first migration when tables of our names exist that our migrations table does
 * not account for (most likely LangGraph's official saver's), before anything changes.
 */
import { type SQL, sql } from "drizzle-orm";
import type { Dialect, MigrationOptions } from "../../dialects/dialect.js";
import { ExistingTablesError } from "../../errors.js";
import type { Runner } from "../../sql/executor.js";
import { journal } from "./folder.js";

/** The tables our first migration creates, in the current schema or database. */
const OUR_TABLES = ["checkpoints", "checkpoint_blobs", "checkpoint_writes"];

/**
 * Which of `names` exist as tables (see Dialect.tablesNamed), asked on the migration's
 * own connection: on SQLite another one would wait for its write lock.
 */
async function existingTables(tx: Runner, dialect: Dialect, names: string[], schema?: string): Promise<string[]> {
  return (await tx.all(dialect.tablesNamed(names, schema))).map((row) => String(row.name));
}

/**
 * Before the first migration, under the migrations lock: tables of our names that our
 * migrations table does not account for belong to someone else, most likely LangGraph's
 * official saver. Creating ours would fail half-way with "already exists" (and on MySQL
 * leave the first tables behind), so stop before changing anything.
 */
export async function refuseExistingTables(
  tx: Runner,
  dialect: Dialect,
  options: MigrationOptions,
  migrationsTable: SQL,
): Promise<void> {
  const ours = await existingTables(tx, dialect, [options.migrationsTable], options.migrationsSchema);
  if (ours.length > 0) {
    const [recorded] = await tx.all(sql`select count(*) as n from ${migrationsTable}`);
    if (Number(recorded.n) > 0) return;
  }
  const { officialMarker: marker, location, elsewhere } = dialect.foreignTables;
  const found = await existingTables(tx, dialect, [...OUR_TABLES, ...(marker ? [marker.table] : [])]);
  const clashing = OUR_TABLES.filter((name) => found.includes(name));
  if (clashing.length === 0) return;
  const plural = clashing.length > 1;
  const owner =
    marker && found.includes(marker.table)
      ? `${plural ? "they look" : "it looks"} like a table of LangGraph's official saver (${marker.saver})`
      : `${plural ? "they were" : "it was"} not created by this saver`;
  const tables = clashing.map((n) => `"${n}"`).join(", ");
  const exist = clashing.length > 1 ? `tables ${tables} already exist` : `table ${tables} already exists`;
  const explanation =
    `the ${exist} in ${location}, and ${options.migrationsTable} records none of our migrations: ${owner}. ` +
    "Nothing was changed. " +
    "To keep both, give ours other names: define them with checkpointTables({ prefix }) in your schema and pass them " +
    `as the \`tables\` option (docs/already-on-drizzle.md, recipe A), ${elsewhere}`;
  const [first] = journal(options.migrationsFolder);
  throw new ExistingTablesError(clashing, explanation, first);
}
