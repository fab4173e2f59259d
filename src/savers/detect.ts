import { is } from "drizzle-orm";
import { MySqlDatabase } from "drizzle-orm/mysql-core";
import { PgDatabase } from "drizzle-orm/pg-core";
import { BaseSQLiteDatabase } from "drizzle-orm/sqlite-core";
import * as mysqlSchema from "../schema/mysql.js";
import * as pgSchema from "../schema/pg.js";
import * as sqliteSchema from "../schema/sqlite.js";
import type { Dialect } from "./dialect.js";
import { type AnyMySqlDatabase, mysqlDialect } from "./mysql.js";
import { type AnyPgDatabase, pgDialect } from "./pg.js";
import { type AnySQLiteDatabase, sqliteDialect } from "./sqlite.js";

export type SupportedDatabase = AnyPgDatabase | AnyMySqlDatabase | AnySQLiteDatabase;

/** Tables passed by an application that defines them in its own schema (see `checkpointTables`). */
export type CheckpointTables =
  | pgSchema.PgCheckpointTables
  | mysqlSchema.MySqlCheckpointTables
  | sqliteSchema.SQLiteCheckpointTables;

export interface DialectChoice {
  dialect: Dialect;
  /** Folder name under migrations/. */
  migrations: "pg" | "mysql" | "sqlite";
}

/** Picks the dialect from the class of the drizzle instance, as drizzle's own adapters do. */
export function detectDialect(db: SupportedDatabase, tables: CheckpointTables | undefined): DialectChoice {
  if (is(db, PgDatabase)) {
    const own = (tables ?? pgSchema.checkpointTables()) as pgSchema.PgCheckpointTables;
    return { dialect: pgDialect(db as AnyPgDatabase, own), migrations: "pg" };
  }
  if (is(db, MySqlDatabase)) {
    const own = (tables ?? mysqlSchema.checkpointTables()) as mysqlSchema.MySqlCheckpointTables;
    return { dialect: mysqlDialect(db as AnyMySqlDatabase, own), migrations: "mysql" };
  }
  if (is(db, BaseSQLiteDatabase)) {
    const own = (tables ?? sqliteSchema.checkpointTables()) as sqliteSchema.SQLiteCheckpointTables;
    return { dialect: sqliteDialect(db as AnySQLiteDatabase, own), migrations: "sqlite" };
  }
  throw new TypeError("DrizzleSaver needs a drizzle database over postgres (postgres.js), mysql2 or better-sqlite3");
}
