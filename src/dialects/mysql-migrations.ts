/**
 * MySQL and MariaDB commit each DDL statement on its own (one statement is atomic,
 * a migration of several is not), so a setup() killed half-way used to leave tables
 * that existed without their migration being recorded, and every later setup()
 * failed on "Table ... already exists".
 *
 * Progress is therefore recorded per statement, in the migrations table itself: a row
 * with the migration's timestamp negated (never a journal timestamp, so never read as
 * an applied migration) and the number of statements done in `hash`. The row is
 * written before the first statement runs. A later run resumes at the statement after
 * the last one recorded; that statement may have been applied by the run that was
 * killed before it could record it, so there, and only there, an error saying its
 * work is already done (the table, column or index exists, or what it drops is gone)
 * counts as done. Without a progress row nothing is tolerated: a table of the same
 * name that was not made by us is still an error.
 */
import { createHash } from "node:crypto";
import { type SQL, sql } from "drizzle-orm";
import type { MigrationMeta } from "drizzle-orm/migrator";
import type { Executor, Runner } from "../sql/executor.js";
import { valueList } from "../sql/statements.js";
import type { DialectMigrations } from "./dialect.js";

/** Server errors meaning a DDL statement's effect is already there. */
const ALREADY_DONE = new Set([
  1050, // table exists
  1051, // unknown table (a DROP TABLE)
  1054, // unknown column (a CHANGE or RENAME COLUMN whose old name is gone)
  1060, // duplicate column
  1061, // duplicate key name
  1068, // multiple primary key
  1091, // can't drop a field or key: it is gone
  1176, // unknown key (a RENAME INDEX whose old name is gone)
  1826, // duplicate foreign key name
  1359, // trigger exists
  1360, // trigger does not exist (a DROP TRIGGER)
]);

function errno(error: unknown): unknown {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; depth++) {
    const code = (current as { errno?: unknown }).errno;
    if (code !== undefined) return code;
    current = current.cause;
  }
  return undefined;
}

const PROGRESS = /^in progress: (\d+) statements done$/;

/** The trigger a CREATE TRIGGER statement makes (its quoted name), after any leading comment. */
const CREATE_TRIGGER = /^(?:\s*--[^\n]*\n)*\s*create\s+trigger\s+(`[^`]+`)/i;

/**
 * Applies one migration's statements, resuming after the last one a killed run
 * recorded, then turns its progress row into the row recording it as applied (one
 * statement: a kill leaves either the progress row or the record, never both).
 */
async function applyResumably(tx: Runner, table: SQL, migration: MigrationMeta): Promise<void> {
  const statements = migration.sql.filter((statement) => statement.trim());
  const key = -migration.folderMillis;
  const [row] = await tx.all(sql`select hash from ${table} where created_at = ${key} order by id desc limit 1`);
  const resumed = typeof row?.hash === "string" ? PROGRESS.exec(row.hash) : null;
  const done = resumed ? Number(resumed[1]) : 0;
  const record = (count: number) =>
    tx.run(sql`update ${table} set hash = ${`in progress: ${count} statements done`} where created_at = ${key}`);
  if (!resumed) {
    await tx.run(sql`insert into ${table} (hash, created_at) values (${"in progress: 0 statements done"}, ${key})`);
  }
  for (let i = done; i < statements.length; i++) {
    // A CREATE TRIGGER cut short by a kill can leave its trigger with an empty body, or, killed
    // while it parsed the table's triggers, a cached table instance whose triggers failed to
    // load (every later insert then fails: "Unknown trigger has an error in its body"; see
    // mysql-trigger-cache.ts). "Already exists" would keep either: the resumed statement drops
    // the trigger first and creates it whole, which also evicts the instance.
    const trigger = resumed && i === done ? CREATE_TRIGGER.exec(statements[i])?.[1] : undefined;
    if (trigger) await tx.script(sql.raw(`drop trigger if exists ${trigger}`));
    try {
      await tx.script(sql.raw(statements[i]));
    } catch (error) {
      if (!(resumed && i === done && ALREADY_DONE.has(Number(errno(error))))) throw error;
    }
    await record(i + 1);
  }
  await tx.run(
    sql`update ${table} set hash = ${migration.hash}, created_at = ${migration.folderMillis} where created_at = ${key}`,
  );
}

/** The MySQL dialect's part in the migration loop (src/savers/migrations/migrate.ts): the table of applied migrations and its lock. */
const LOCK_PREFIX = "langgraph-checkpoint-drizzle:";
/** MySQL 8 refuses a GET_LOCK name of more than 64 characters (MariaDB takes 192). */
const MAX_LOCK_NAME = 64;

/**
 * The name of the lock setup() holds while it migrates the migrations table of a database:
 * the prefix and a digest of both names. GET_LOCK names are server-wide, so the database
 * is part of it (setup() on two databases of one server never wait for each other), and
 * digested, as a database and a table name together pass MySQL's 64 characters.
 */
export function migrationLockName(database: string, migrationsTable: string): string {
  const digest = createHash("sha256")
    .update(JSON.stringify([database, migrationsTable]))
    .digest("base64url");
  return `${LOCK_PREFIX}${digest.slice(0, MAX_LOCK_NAME - LOCK_PREFIX.length)}`;
}

export function mysqlMigrationSteps(executor: Executor): DialectMigrations {
  return {
    migrationsTable: async ({ migrationsTable }) => sql`${sql.identifier(migrationsTable)}`,
    async migrationsTableExists({ migrationsTable }) {
      const found = await executor.all(
        sql`select 1 from information_schema.tables where table_schema = database() and table_name = ${migrationsTable}`,
      );
      return found.length > 0;
    },
    tablesNamed: (names) =>
      sql`select table_name as name from information_schema.tables
            where table_schema = database() and table_name in (${valueList(names)})`,
    foreignTables: { location: "the database", elsewhere: "or use another database." },
    createMigrationsTable: (table) =>
      sql`create table if not exists ${table} (id serial primary key, hash text not null, created_at bigint)`,
    // The transaction pins one connection, which GET_LOCK needs.
    async lockMigrations(tx, { migrationsTable }) {
      // The database the unqualified migrations table is in: the connection's current one.
      const [current] = await tx.all(sql`select database() as name`);
      const lock = migrationLockName(String(current?.name ?? ""), migrationsTable);
      const [acquired] = await tx.all(sql`select get_lock(${lock}, 300) as acquired`);
      if (Number(acquired?.acquired) !== 1) throw new Error(`could not take the migration lock "${lock}"`);
      return async () => {
        await tx.all(sql`select release_lock(${lock})`);
      };
    },
    // DDL commits implicitly: progress is recorded per statement (see applyResumably).
    async applyMigration(tx, table, migration) {
      await applyResumably(tx, table, migration);
      return true;
    },
  };
}
