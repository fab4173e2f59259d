/**
 * Picks the dialect from the class of a drizzle database and the executor from its driver;
 * the supported drivers are listed here, one line each.
 */
import { is } from "drizzle-orm";
import {
  type MySqlDatabase,
  MySqlDatabase as MySqlDatabaseClass,
  type MySqlQueryResultHKT,
  type PreparedQueryHKTBase,
} from "drizzle-orm/mysql-core";
import { type PgDatabase, PgDatabase as PgDatabaseClass, type PgQueryResultHKT } from "drizzle-orm/pg-core";
import { type BaseSQLiteDatabase, BaseSQLiteDatabase as BaseSQLiteDatabaseClass } from "drizzle-orm/sqlite-core";
import type { Dialect } from "../dialects/dialect.js";
import { deriveMySqlValue, mysqlDialect } from "../dialects/mysql.js";
import { mysqlStoreDialect } from "../dialects/mysql-store.js";
import { pgDialect } from "../dialects/pg.js";
import { pgStoreDialect } from "../dialects/pg-store.js";
import { sqliteDialect } from "../dialects/sqlite.js";
import { sqliteStoreDialect } from "../dialects/sqlite-store.js";
import type { StoreDialect } from "../dialects/store-dialect.js";
import { betterSqliteExecutor } from "../drivers/better-sqlite3.js";
import { D1_DRIVER, d1Executor } from "../drivers/d1.js";
import { sessionKind } from "../drivers/drizzle-internals.js";
import { withHiddenParameters } from "../drivers/hide-parameters.js";
import { libsqlExecutor } from "../drivers/libsql.js";
import { mysql2Executor } from "../drivers/mysql2.js";
import { nodePostgresExecutor } from "../drivers/node-postgres.js";
import { pgliteExecutor } from "../drivers/pglite.js";
import { postgresJsExecutor } from "../drivers/postgres-js.js";
import { describeValue, InvalidInputError, UnsupportedDriverError } from "../errors.js";
import * as mysqlSchema from "../schema/mysql.js";
import * as pgSchema from "../schema/pg.js";
import * as sqliteSchema from "../schema/sqlite.js";
import type { Executor, ExecutorOptions } from "../sql/executor.js";

// biome-ignore lint/suspicious/noExplicitAny: drizzle's schema parameter is invariant; any schema is accepted.
export type AnyPgDatabase = PgDatabase<PgQueryResultHKT, any>;
// biome-ignore lint/suspicious/noExplicitAny: as above.
export type AnyMySqlDatabase = MySqlDatabase<MySqlQueryResultHKT, PreparedQueryHKTBase, any>;
// biome-ignore lint/suspicious/noExplicitAny: as above.
export type AnySQLiteDatabase = BaseSQLiteDatabase<"sync" | "async", unknown, any>;

export type SupportedDatabase = AnyPgDatabase | AnyMySqlDatabase | AnySQLiteDatabase;

/** Tables passed by an application that defines them in its own schema (see `checkpointTables`). */
export type CheckpointTables =
  | pgSchema.PgCheckpointTables
  | mysqlSchema.MySqlCheckpointTables
  | sqliteSchema.SQLiteCheckpointTables;

/** Tables of the store passed by an application that defines them in its own schema (see `storeTables`). */
export type StoreTables = pgSchema.PgStoreTables | mysqlSchema.MySqlStoreTables | sqliteSchema.SQLiteStoreTables;

/** A database family: its SQL dialect, default tables and migrations folder. */
interface Family {
  /** Folder name under migrations/. */
  migrations: "pg" | "mysql" | "sqlite";
  matches(db: unknown): boolean;
  dialect(executor: Executor, tables: CheckpointTables | undefined, schema: string | undefined): Dialect;
  store(executor: Executor, tables: StoreTables | undefined, schema: string | undefined): StoreDialect;
  executorOptions: ExecutorOptions;
}

const FAMILIES: Family[] = [
  {
    migrations: "pg",
    matches: (db) => is(db, PgDatabaseClass),
    dialect: (executor, tables, schema) =>
      pgDialect(executor, (tables ?? pgSchema.checkpointTables({ schema })) as pgSchema.PgCheckpointTables),
    store: (executor, tables, schema) =>
      pgStoreDialect(executor, (tables ?? pgSchema.storeTables({ schema })) as pgSchema.PgStoreTables),
    executorOptions: {},
  },
  {
    migrations: "mysql",
    matches: (db) => is(db, MySqlDatabaseClass),
    dialect: (executor, tables) =>
      mysqlDialect(
        executor,
        (tables ?? {
          ...mysqlSchema.checkpointTables(),
          checkpointMetadata: mysqlSchema.checkpointMetadata,
        }) as mysqlSchema.MySqlCheckpointTables,
      ),
    store: (executor, tables) =>
      mysqlStoreDialect(executor, (tables ?? mysqlSchema.storeTables()) as mysqlSchema.MySqlStoreTables),
    executorOptions: { derive: deriveMySqlValue },
  },
  {
    migrations: "sqlite",
    matches: (db) => is(db, BaseSQLiteDatabaseClass),
    dialect: (executor, tables) =>
      sqliteDialect(executor, (tables ?? sqliteSchema.checkpointTables()) as sqliteSchema.SQLiteCheckpointTables),
    store: (executor, tables) =>
      sqliteStoreDialect(executor, (tables ?? sqliteSchema.storeTables()) as sqliteSchema.SQLiteStoreTables),
    executorOptions: {},
  },
];

/** A driver: the drizzle session class it comes with, and its executor. One line per driver. */
interface DriverEntry {
  /** The package name, for messages. */
  driver: string;
  /** drizzle's class name (`entityKind`) of the driver's session. */
  session: string;
  executor(db: unknown, options: ExecutorOptions): Executor;
}

export const DRIVERS: readonly DriverEntry[] = [
  { driver: "postgres", session: "PostgresJsSession", executor: postgresJsExecutor },
  { driver: "pg", session: "NodePgSession", executor: nodePostgresExecutor },
  { driver: "@electric-sql/pglite", session: "PgliteSession", executor: pgliteExecutor },
  { driver: "mysql2", session: "MySql2Session", executor: mysql2Executor },
  { driver: "better-sqlite3", session: "BetterSQLiteSession", executor: betterSqliteExecutor },
  { driver: "@libsql/client", session: "LibSQLSession", executor: libsqlExecutor },
  { driver: D1_DRIVER, session: "SQLiteD1Session", executor: d1Executor },
];

const SUPPORTED = DRIVERS.map((entry) => entry.driver).join(", ");

export interface Resolved {
  dialect: Dialect;
  /** Folder name under migrations/. */
  migrations: Family["migrations"];
}

/** The family and executor of a drizzle database; `who` names the class in messages. */
function familyOf(
  db: SupportedDatabase,
  who: string,
  schema: string | undefined,
  hasTables: boolean,
  options: ExecutorOptions = {},
) {
  const family = FAMILIES.find((candidate) => candidate.matches(db));
  const kind = sessionKind(db);
  if (!family) {
    throw new UnsupportedDriverError(
      `${who} needs a drizzle database (from drizzle-orm/<driver>), got ${kind ?? describeValue(db)}; supported drivers: ${SUPPORTED}`,
    );
  }
  const entry = DRIVERS.find((candidate) => candidate.session === kind);
  if (!entry) {
    throw new UnsupportedDriverError(
      `the drizzle driver behind this database (${kind ?? "unknown session"}) is not supported; supported drivers: ${SUPPORTED}`,
    );
  }
  if (schema !== undefined) {
    if (family.migrations !== "pg") throw new InvalidInputError("the schema option is for PostgreSQL only");
    requireName(schema, "schema");
    if (hasTables) throw new InvalidInputError("pass either schema or tables: tables name their own schema");
  }
  const executor = withHiddenParameters(entry.executor(db, { ...family.executorOptions, ...options }));
  return { family, executor };
}

/**
 * Finds the dialect from the class of the drizzle database and the executor from its
 * driver. Touches nothing in the database: an unsupported one fails here, before any write.
 */
export function resolve(
  db: SupportedDatabase,
  tables: CheckpointTables | undefined,
  schema?: string,
  options?: ExecutorOptions,
): Resolved {
  const { family, executor } = familyOf(db, "DrizzleSaver", schema, tables !== undefined, options);
  return { dialect: family.dialect(executor, tables, schema), migrations: family.migrations };
}

/**
 * The options naming the table of applied migrations, checked when a saver or store is
 * made, as `schema` is: a blank name would make a table without a name, and a schema on a
 * database without schemas would be ignored without a word.
 */
export function checkMigrationsLocation(migrations: Family["migrations"], table: unknown, schema: unknown): void {
  if (table !== undefined) requireName(table, "migrationsTable");
  if (schema === undefined) return;
  if (migrations !== "pg") throw new InvalidInputError("the migrationsSchema option is for PostgreSQL only");
  requireName(schema, "migrationsSchema");
}

/**
 * A name option (`schema`, `migrationsTable`, `migrationsSchema`): a non-blank string. The
 * options' checks call it too (checkTablesOptions), before a database is known.
 */
function requireName(value: unknown, option: string): void {
  if (typeof value === "string" && value.trim().length > 0) return;
  const shown = typeof value === "string" ? JSON.stringify(value) : describeValue(value);
  throw new InvalidInputError(`${option} must be a non-empty string, got ${shown}`);
}

/**
 * The options saying where the tables are, checked before a database is known (the
 * saver's and the store's options alike): `tables` an object (`madeBy` names what makes
 * it, for the error), `schema`, `migrationsTable` and `migrationsSchema` non-blank names.
 * Which family `tables` belongs to, and `schema` on PostgreSQL only, need the database.
 */
export function checkTablesOptions(
  options: { tables?: unknown; schema?: unknown; migrationsTable?: unknown; migrationsSchema?: unknown },
  madeBy: "checkpointTables()" | "storeTables()",
): void {
  const { tables } = options;
  if (tables !== undefined && (typeof tables !== "object" || tables === null || Array.isArray(tables))) {
    throw new InvalidInputError(`tables must be what ${madeBy} returns, got ${describeValue(tables)}`);
  }
  for (const name of ["schema", "migrationsTable", "migrationsSchema"] as const) {
    if (options[name] !== undefined) requireName(options[name], name);
  }
}

export interface ResolvedStore extends Resolved {
  store: StoreDialect;
}

/**
 * The store's dialect, and the saver's dialect over the same executor for the migrations
 * (the store's tables come with the shipped migrations). Touches nothing in the database.
 */
export function resolveStore(db: SupportedDatabase, tables: StoreTables | undefined, schema?: string): ResolvedStore {
  const { family, executor } = familyOf(db, "DrizzleStore", schema, tables !== undefined);
  return {
    dialect: family.dialect(executor, undefined, schema),
    store: family.store(executor, tables, schema),
    migrations: family.migrations,
  };
}
