/**
 * How the PostgreSQL dialect finds, creates and locks its migrations table: beside our
 * tables (the saver's `schema` option, else the current schema), an advisory lock per
 * table serialising concurrent setup() calls across processes.
 */
import { type SQL, sql } from "drizzle-orm";
import type { Executor, Runner } from "../sql/executor.js";
import { valueList } from "../sql/statements.js";
import type { DialectMigrations, MigrationOptions } from "./dialect.js";

export const quote = (identifier: string) => `"${identifier.replaceAll('"', '""')}"`;

async function currentSchema(runner: Runner): Promise<string> {
  const [row] = await runner.all(sql`select current_schema() as schema`);
  if (typeof row?.schema !== "string")
    throw new Error("PostgreSQL has no current schema: set search_path or migrationsSchema");
  return row.schema;
}

/** A stable 31-bit number naming the advisory lock of one migrations table. */
export function lockNumber(name: string): number {
  let hash = 0;
  for (const char of name) hash = (Math.imul(hash, 31) + (char.codePointAt(0) ?? 0)) | 0;
  return hash & 0x7fffffff;
}

/**
 * Makes a transaction READ COMMITTED, whatever default_transaction_isolation says; first
 * in a transaction that takes an advisory lock and then reads what its holder created.
 * Under a stricter isolation the snapshot would be taken before the lock wait, hiding
 * what the caller we waited for committed (its migrations table rows, the catalog rows
 * of its tables), and the work would run again ('relation ... already exists'). Each
 * statement then reads what is committed when it starts: after the lock, everything before it.
 */
export async function readCommitted(tx: Runner): Promise<void> {
  await tx.script(sql`set transaction isolation level read committed`);
}

/** The migrations members of the PostgreSQL dialect; `tablesSchema` is the schema the tables name, if any. */
export function pgMigrationParts(executor: Executor, tablesSchema: string | undefined): DialectMigrations {
  const schemaOf = async (options: MigrationOptions, runner: Runner = executor) =>
    options.migrationsSchema ?? tablesSchema ?? (await currentSchema(runner));
  return {
    // By default beside our tables, which the migrations create in the current schema.
    migrationsTable: async (options) =>
      sql`${sql.identifier(await schemaOf(options))}.${sql.identifier(options.migrationsTable)}`,
    async migrationsTableExists(options) {
      const name = `${quote(await schemaOf(options))}.${quote(options.migrationsTable)}`;
      const [exists] = await executor.all(sql`select to_regclass(${name}) is not null as found`);
      return Boolean(exists.found);
    },
    tablesNamed: (names, schema) =>
      sql`select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
          where n.nspname = ${schema === undefined ? sql`current_schema()` : sql`${schema}`}
            and c.relname in (${valueList(names)})`,
    foreignTables: {
      officialMarker: { table: "checkpoint_migrations", saver: "@langchain/langgraph-checkpoint-postgres" },
      location: "the current schema",
      elsewhere:
        "or let setup() create them in a PostgreSQL schema of their own (a search_path leading to it, and migrationsSchema).",
    },
    createMigrationsTable: (table: SQL) =>
      sql`create table if not exists ${table} (id serial primary key, hash text not null, created_at bigint)`,
    async lockMigrations(tx: Runner, options) {
      await readCommitted(tx);
      const schema = await schemaOf(options, tx);
      // Serialises concurrent setup() calls across processes until the transaction ends.
      await tx.all(sql`select pg_advisory_xact_lock(${lockNumber(`${schema}.${options.migrationsTable}`)})`);
      for (const name of new Set([schema, tablesSchema ?? schema])) {
        const exists = (await tx.all(sql`select 1 from pg_namespace where nspname = ${name}`)).length;
        if (!exists) await tx.script(sql`create schema ${sql.identifier(name)}`);
      }
      // The shipped migration SQL names no schema: this transaction's search_path puts it in ours.
      if (tablesSchema) await tx.script(sql`select set_config('search_path', ${quote(tablesSchema)}, true)`);
      return async () => {};
    },
  };
}
