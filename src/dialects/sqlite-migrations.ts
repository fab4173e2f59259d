/**
 * The SQLite dialect's migrations table: in the database beside our tables, no lock of
 * its own (the migration transaction holds the database's write lock), and on a
 * batch-only driver each migration applied as one guarded batch.
 */
import { sql } from "drizzle-orm";
import type { Executor } from "../sql/executor.js";
import { valueList } from "../sql/statements.js";
import type { DialectMigrations } from "./dialect.js";
import { batchUnits, guard } from "./sqlite-units.js";

/** The migrations members of the SQLite dialect. */
export function sqliteMigrationParts(executor: Executor): DialectMigrations {
  const batch = executor.batch?.bind(executor);
  const batched = batch && batchUnits(batch);
  return {
    migrationsTable: async ({ migrationsTable }) => sql`${sql.identifier(migrationsTable)}`,
    async migrationsTableExists({ migrationsTable }) {
      const found = await executor.all(
        sql`select 1 from sqlite_master where type = 'table' and name = ${migrationsTable}`,
      );
      return found.length > 0;
    },
    tablesNamed: (names) => sql`select name from sqlite_master where type = 'table' and name in (${valueList(names)})`,
    foreignTables: {
      officialMarker: { table: "writes", saver: "@langchain/langgraph-checkpoint-sqlite" },
      location: "the database",
      elsewhere: "or use another database.",
    },
    createMigrationsTable: (table) =>
      sql`create table if not exists ${table} (id integer primary key autoincrement, hash text not null, created_at numeric)`,
    // The executor's transaction holds the database's write lock already.
    lockMigrations: async () => async () => {},
    ...(batched && {
      // Batch-only: the loop reads on the database itself, and each migration is one batch
      // (its statements and its record) guarded by its not being recorded yet, which a
      // concurrent setup() may have done meanwhile: then it is left as that one applied it.
      migrationRun: (work) => work(executor),
      async applyMigration(_tx, table, migration) {
        const notRecorded = sql`select 1 where not exists (select 1 from ${table} where created_at = ${migration.folderMillis})`;
        try {
          await batch([
            guard(notRecorded),
            ...migration.sql.filter((statement) => statement.trim()).map((statement) => sql.raw(statement)),
            sql`insert into ${table} (hash, created_at) values (${migration.hash}, ${migration.folderMillis})`,
          ]);
          return true;
        } catch (error) {
          if (!batched.guardFailed(error)) throw error;
          return false;
        }
      },
    }),
  };
}
