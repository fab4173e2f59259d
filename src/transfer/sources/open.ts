/** Opens a source from a URL: which format its tables are in (ours, an official saver's), and a connection (SQLite read-only). */
import { existsSync } from "node:fs";
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { databaseFamily, sqliteFile } from "../../database-family.js";
import { InvalidInputError } from "../../errors.js";
import { MsgpackSerializer } from "../../serde/msgpack.js";
import { connect, POSTGRES_OPTIONS, parsedByDriver, SQLITE_BUSY_TIMEOUT_MS } from "../../wiring/connect.js";
import { type CheckpointTables, resolve } from "../../wiring/registry.js";
import type { ThreadSelection, TransferSource } from "../records.js";
import { officialSerde } from "./official.js";
import { OfficialPostgresSource } from "./official-postgres.js";
import { OfficialSqliteSource } from "./official-sqlite.js";
import { OurSource } from "./ours.js";

export const SOURCE_FORMATS = ["ours", "official-postgres", "official-sqlite"] as const;
export type SourceFormat = (typeof SOURCE_FORMATS)[number];

export interface DatabaseSourceOptions extends ThreadSelection {
  /** Source database URL: postgres://, postgresql://, mysql://, mariadb://, file:<path> or a path. */
  url: string;
  /** The source's format; detected from its tables when omitted. */
  format?: SourceFormat;
  /**
   * PostgreSQL: the schema of the source's tables. For ours, the saver's `schema` option
   * (the search path by default); for the official saver's, its `schema` option ("public").
   */
  schema?: string;
  /** Our tables as the application made them (the saver's `tables`, e.g. a prefix); the format is then ours. */
  tables?: CheckpointTables;
  /** Our serializer, for values converted from an official saver; MessagePack by default. */
  serde?: SerializerProtocol;
}

/** Opens a database as a source, detecting whose tables it holds unless `format` says. */
export async function openDatabaseSource(options: DatabaseSourceOptions): Promise<TransferSource> {
  const { url } = options;
  const family = databaseFamily(url);
  const ours = options.serde ?? new MsgpackSerializer();
  if (options.tables && options.format && options.format !== "ours") {
    throw new InvalidInputError(
      `tables given as the saver's "tables" option are in our format, not "${options.format}"`,
    );
  }
  if (family === "postgres") return options.tables ? openOurs(url, options) : openPostgres(options, ours);
  if (family === "mysql") {
    if (options.format && options.format !== "ours") {
      throw new InvalidInputError(`a MySQL source can only be in our format, not "${options.format}"`);
    }
    return openOurs(url, options);
  }
  // The file fromUrl would open (openOurs below goes through it): escapes decoded, no query.
  const path = sqliteFile(url) as string;
  if (!existsSync(path)) throw new InvalidInputError(`no SQLite file at "${path}"`);
  const { default: Database } = await import("better-sqlite3");
  // Read-only, whatever the format: a source is only read, and opening it for writing
  // would switch it to WAL (changing its bytes) and fail on a file the user cannot write.
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    // A writer of another process may hold the lock for a moment: wait for it rather than fail.
    db.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
    const format = options.format ?? (options.tables ? "ours" : sqliteFormat(db));
    if (format === "official-sqlite") {
      return new OfficialSqliteSource(db, await officialSerde("sqlite"), ours, options);
    }
    if (format === "official-postgres")
      throw new InvalidInputError("an SQLite file cannot hold official-postgres tables");
    const { drizzle } = await import("drizzle-orm/better-sqlite3");
    const { dialect } = resolve(drizzle(db), options.tables);
    return new OurSource(dialect, options, async () => {
      db.close();
    });
  } catch (error) {
    db.close();
    throw error;
  }
}

function sqliteFormat(db: import("better-sqlite3").Database): SourceFormat {
  const columns = (table: string) =>
    (db.prepare(`select name from pragma_table_info(?)`).all(table) as { name: string }[]).map((c) => c.name);
  const checkpoints = columns("checkpoints");
  if (checkpoints.includes("checkpoint_type") && columns("checkpoint_blobs").length > 0) return "ours";
  if (checkpoints.includes("type") && columns("writes").length > 0) return "official-sqlite";
  throw new InvalidInputError("the SQLite file holds no checkpoint tables, neither ours nor the official saver's");
}

async function openOurs(url: string, options: DatabaseSourceOptions): Promise<TransferSource> {
  const connection = await connect(url);
  try {
    const { dialect } = resolve(connection.db, options.tables, options.schema);
    return new OurSource(dialect, options, connection.close);
  } catch (error) {
    await connection.close();
    throw error;
  }
}

async function openPostgres(options: DatabaseSourceOptions, ours: SerializerProtocol): Promise<TransferSource> {
  const { default: postgres } = await import("postgres");
  const sql = parsedByDriver(options.url, () => postgres(options.url, { ...POSTGRES_OPTIONS, max: 1 }));
  try {
    let format = options.format;
    if (format === undefined) {
      // Our checkpoints table has checkpoint_type (bytes); the official one type and a JSONB checkpoint.
      const rows = await sql`select column_name from information_schema.columns
        where table_name = 'checkpoints' and table_schema = coalesce(${options.schema ?? null}::text, current_schema())`;
      const names = rows.map((row) => row.column_name as string);
      if (names.includes("checkpoint_type")) format = "ours";
      else if (names.includes("type")) format = "official-postgres";
      else
        throw new InvalidInputError(
          `the database holds no checkpoints table${options.schema ? ` in schema "${options.schema}"` : ""}, neither ours nor the official saver's`,
        );
    }
    if (format === "official-postgres") {
      return new OfficialPostgresSource(
        sql,
        options.schema ?? "public",
        await officialSerde("postgres"),
        ours,
        options,
      );
    }
    if (format === "official-sqlite")
      throw new InvalidInputError("a PostgreSQL database cannot hold official-sqlite tables");
  } catch (error) {
    await sql.end({ timeout: 5 });
    throw error;
  }
  await sql.end({ timeout: 5 });
  return openOurs(options.url, options);
}
