/**
 * Applying the shipped drizzle-kit migrations under the dialect's lock, and reading which
 * of them are applied: what `setup()` and `migrationStatus()` run.
 */
import { sql } from "drizzle-orm";
import type { MigrationMeta } from "drizzle-orm/migrator";
import { readMigrationFiles } from "drizzle-orm/migrator";
import type { Dialect, MigrationOptions } from "../../dialects/dialect.js";
import { InvalidInputError, MigrationError, type MigrationInfo } from "../../errors.js";
import { refuseExistingTables } from "./existing-tables.js";
import { journal } from "./folder.js";

export type { MigrationMeta };

/**
 * The journal entries of a migrations folder that are not yet recorded. An entry is
 * identified by its journal timestamp (`folderMillis`), not by being newer than the
 * newest recorded row, so two histories sharing a table never hide each other.
 */
function pendingMigrations(folder: string, appliedMillis: Iterable<unknown>): MigrationMeta[] {
  const applied = new Set([...appliedMillis].map((value) => Number(value)));
  return readMigrationFiles({ migrationsFolder: folder }).filter((m) => !applied.has(m.folderMillis));
}

/** Runs one migration's statements, turning a failure into a {@link MigrationError}. */
async function applying(migration: MigrationMeta, run: () => Promise<void>): Promise<void> {
  try {
    await run();
  } catch (error) {
    throw new MigrationError(migration.folderMillis, error);
  }
}

/** Journal timestamps (`folderMillis`) of the migrations recorded as applied. */
export async function appliedMigrations(dialect: Dialect, options: MigrationOptions): Promise<number[]> {
  if (!(await dialect.migrationsTableExists(options))) return [];
  const table = await dialect.migrationsTable(options);
  const rows = await dialect.executor.all(sql`select created_at from ${table}`);
  return rows.map((row) => Number(row.created_at));
}

/**
 * Applies the shipped migrations in one transaction, under the dialect's lock that
 * serialises concurrent callers (on a batch-only driver, each in a batch of its own:
 * see Dialect.migrationRun); returns the journal timestamps of those it applied.
 * Each is recorded right after its statements (MySQL commits DDL implicitly). A
 * failure is a MigrationError.
 */
export async function migrate(dialect: Dialect, options: MigrationOptions): Promise<number[]> {
  const table = await dialect.migrationsTable(options);
  const applied: number[] = [];
  const run = dialect.migrationRun?.bind(dialect) ?? ((work) => dialect.executor.transaction(work));
  await run(async (tx) => {
    const unlock = await dialect.lockMigrations(tx, options);
    try {
      // The table's name as resolved before the transaction: resolving it again here would
      // query outside the transaction, which a one-connection database (PGlite) waits on forever.
      await refuseExistingTables(tx, dialect, options, table);
      await tx.script(dialect.createMigrationsTable(table));
      const recorded = await tx.all(sql`select created_at from ${table}`);
      for (const migration of pendingMigrations(
        options.migrationsFolder,
        recorded.map((row) => row.created_at),
      )) {
        const recordApplied = async () => {
          await tx.run(
            sql`insert into ${table} (hash, created_at) values (${migration.hash}, ${migration.folderMillis})`,
          );
        };
        if (dialect.applyMigration) {
          const apply = dialect.applyMigration.bind(dialect);
          let appliedHere = true;
          await applying(migration, async () => {
            appliedHere = await apply(tx, table, migration);
          });
          if (!appliedHere) continue;
        } else {
          await applying(migration, async () => {
            for (const statement of migration.sql) if (statement.trim()) await tx.script(sql.raw(statement));
          });
          await recordApplied();
        }
        applied.push(migration.folderMillis);
      }
    } finally {
      await unlock();
    }
  });
  return applied;
}

/** What `migrationStatus()` says: who migrates the tables, and which shipped migrations are applied. */
export interface MigrationStatus {
  /**
   * "saver": `setup()` applies the shipped migrations. "application": the saver or store
   * was given the application's own `tables`, which its own migrations create; none of
   * the shipped ones applies to them (`applied` and `pending` are empty).
   */
  managedBy: "saver" | "application";
  /** The shipped migrations recorded as applied, oldest first. */
  applied: MigrationInfo[];
  /** The shipped migrations `setup()` would apply, oldest first. */
  pending: MigrationInfo[];
}

/** The shipped migrations of `folder`, split by whether their journal timestamps are in `appliedMillis`. */
export function splitByApplied(folder: string, appliedMillis: number[]): MigrationStatus {
  const applied = new Set(appliedMillis);
  const all = journal(folder);
  return {
    managedBy: "saver",
    applied: all.filter((m) => applied.has(m.createdAt)),
    pending: all.filter((m) => !applied.has(m.createdAt)),
  };
}

/** Our own migrations table, so we never share drizzle's default one with the application. */
export const DEFAULT_MIGRATIONS_TABLE = "langgraph_checkpoint_migrations";

export interface MigrationSettings {
  /** The dialect's folder of shipped migrations. */
  folder: string;
  /** The application migrates its own tables: `apply` does nothing, `status` says so. */
  ownTables: boolean;
  table?: string;
  schema?: string;
}

/** The saver's `setup` and `migrationStatus`. */
export class Migrations {
  constructor(
    private readonly dialect: Dialect,
    private readonly settings: MigrationSettings,
  ) {}

  async apply(): Promise<MigrationInfo[]> {
    if (this.settings.ownTables) return [];
    const migrations = journal(this.settings.folder);
    const named = (createdAt: number) =>
      migrations.find((m) => m.createdAt === createdAt) ?? { tag: String(createdAt), createdAt };
    try {
      const applied = await migrate(this.dialect, this.options());
      return applied.map(named);
    } catch (error) {
      if (error instanceof MigrationError && !error.migration) {
        throw new MigrationError(error.createdAt, error.cause, named(error.createdAt));
      }
      throw error;
    }
  }

  async status(): Promise<MigrationStatus> {
    // Nothing of ours applies to the application's tables, as apply() says by doing nothing.
    if (this.settings.ownTables) return { managedBy: "application", applied: [], pending: [] };
    return splitByApplied(this.settings.folder, await appliedMigrations(this.dialect, this.options()));
  }

  private options(): MigrationOptions {
    const table = this.settings.table ?? DEFAULT_MIGRATIONS_TABLE;
    // drizzle's migrator applies only entries newer than its newest row: sharing its
    // table would make one history hide the other's migrations.
    if (table === "__drizzle_migrations") {
      throw new InvalidInputError('migrationsTable must not be drizzle\'s own "__drizzle_migrations"');
    }
    return { migrationsFolder: this.settings.folder, migrationsTable: table, migrationsSchema: this.settings.schema };
  }
}
