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
import { pgDialect } from "../dialects/pg.js";
import { sqliteDialect } from "../dialects/sqlite.js";
import * as mysqlSchema from "../schema/mysql.js";
import * as pgSchema from "../schema/pg.js";
import * as sqliteSchema from "../schema/sqlite.js";
import { betterSqliteExecutor } from "./better-sqlite3.js";
import { sessionKind } from "./drizzle-internals.js";
import type { Executor, ExecutorOptions } from "./executor.js";
import { withHiddenParameters } from "./hide-parameters.js";
import { mysql2Executor } from "./mysql2.js";
import { pgSessionExecutor } from "./pg-session.js";
import { postgresJsExecutor } from "./postgres-js.js";
import { sqliteSessionExecutor } from "./sqlite-session.js";

// biome-ignore lint/suspicious/noExplicitAny: drizzle's schema parameter is invariant; any schema is accepted.
export type AnyPgDatabase = PgDatabase<PgQueryResultHKT, any>;
// biome-ignore lint/suspicious/noExplicitAny: as above.
export type AnyMySqlDatabase = MySqlDatabase<MySqlQueryResultHKT, PreparedQueryHKTBase, any>;
// biome-ignore lint/suspicious/noExplicitAny: as above.
export type AnySQLiteDatabase = BaseSQLiteDatabase<"sync", unknown, any>;

export type SupportedDatabase = AnyPgDatabase | AnyMySqlDatabase | AnySQLiteDatabase;

/** Tables passed by an application that defines them in its own schema (see `checkpointTables`). */
export type CheckpointTables =
  | pgSchema.PgCheckpointTables
  | mysqlSchema.MySqlCheckpointTables
  | sqliteSchema.SQLiteCheckpointTables;

/** A database family: its SQL dialect, default tables and migrations folder. */
interface Family {
  /** Folder name under migrations/. */
  migrations: "pg" | "mysql" | "sqlite";
  matches(db: unknown): boolean;
  dialect(executor: Executor, tables: CheckpointTables | undefined): Dialect;
  executorOptions: ExecutorOptions;
  /** Executor for a database whose session is none of the drivers listed. */
  fallback(db: unknown, driver: string, options: ExecutorOptions): Executor;
}

const FAMILIES: Family[] = [
  {
    migrations: "pg",
    matches: (db) => is(db, PgDatabaseClass),
    dialect: (executor, tables) =>
      pgDialect(executor, (tables ?? pgSchema.checkpointTables()) as pgSchema.PgCheckpointTables),
    executorOptions: {},
    fallback: pgSessionExecutor,
  },
  {
    migrations: "mysql",
    matches: (db) => is(db, MySqlDatabaseClass),
    dialect: (executor, tables) =>
      mysqlDialect(executor, (tables ?? mysqlSchema.checkpointTables()) as mysqlSchema.MySqlCheckpointTables),
    executorOptions: { derive: deriveMySqlValue },
    fallback: (db, _driver, options) => mysql2Executor(db, options),
  },
  {
    migrations: "sqlite",
    matches: (db) => is(db, BaseSQLiteDatabaseClass),
    dialect: (executor, tables) =>
      sqliteDialect(executor, (tables ?? sqliteSchema.checkpointTables()) as sqliteSchema.SQLiteCheckpointTables),
    executorOptions: {},
    fallback: sqliteSessionExecutor,
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

export const DRIVERS: DriverEntry[] = [
  { driver: "postgres", session: "PostgresJsSession", executor: postgresJsExecutor },
  { driver: "mysql2", session: "MySql2Session", executor: mysql2Executor },
  { driver: "better-sqlite3", session: "BetterSQLiteSession", executor: betterSqliteExecutor },
];

export interface Resolved {
  dialect: Dialect;
  /** Folder name under migrations/. */
  migrations: Family["migrations"];
}

/** Finds the dialect from the class of the drizzle database and the executor from its driver. */
export function resolve(db: SupportedDatabase, tables: CheckpointTables | undefined): Resolved {
  const family = FAMILIES.find((candidate) => candidate.matches(db));
  if (!family) {
    throw new TypeError("DrizzleSaver needs a drizzle database over postgres (postgres.js), mysql2 or better-sqlite3");
  }
  const kind = sessionKind(db);
  const entry = DRIVERS.find((candidate) => candidate.session === kind);
  const executor = withHiddenParameters(
    entry ? entry.executor(db, family.executorOptions) : family.fallback(db, kind ?? "unknown", family.executorOptions),
  );
  return { dialect: family.dialect(executor, tables), migrations: family.migrations };
}
