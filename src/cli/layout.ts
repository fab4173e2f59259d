/**
 * Where the checkpoint tables are, from --table-prefix, --schema and the --migrations-*
 * options or their environment variables, turned into the saver's options.
 */
import { type DatabaseFamily, databaseFamily } from "../database-family.js";
import { type DrizzleSaverOptions, InvalidInputError } from "../index.js";
import { checkpointTables as mysqlTables } from "../schema/mysql.js";
import { checkpointTables as pgTables } from "../schema/pg.js";
import { checkpointTables as sqliteTables } from "../schema/sqlite.js";
import { UsageError } from "./errors.js";

/** Where the checkpoint tables are, as the command line and the environment give it. */
export interface LayoutOptions {
  /** Recipe A: `checkpointTables({ prefix })`. */
  tablePrefix?: string;
  /** PostgreSQL: the saver's `schema` option; with a prefix, recipe A's `checkpointTables({ prefix, schema })`. */
  schema?: string;
  /** The saver's `migrationsTable`. */
  migrationsTable?: string;
  /** The saver's `migrationsSchema` (PostgreSQL). */
  migrationsSchema?: string;
}

export const LAYOUT_ENV = {
  tablePrefix: "LANGGRAPH_CHECKPOINT_TABLE_PREFIX",
  schema: "LANGGRAPH_CHECKPOINT_SCHEMA",
  migrationsTable: "LANGGRAPH_CHECKPOINT_MIGRATIONS_TABLE",
  migrationsSchema: "LANGGRAPH_CHECKPOINT_MIGRATIONS_SCHEMA",
} as const;

/** The family of the URL's database; an unsupported scheme is a usage error, as when fromUrl refuses it (database.ts). */
function familyOf(url: string): DatabaseFamily {
  try {
    return databaseFamily(url);
  } catch (error) {
    if (error instanceof InvalidInputError) throw new UsageError(error.message);
    throw error;
  }
}

export interface Layout {
  /** What to pass to the saver. */
  saver: DrizzleSaverOptions;
  /**
   * The application's own tables (a prefix): the application creates and
   * migrates them with its drizzle-kit, so the shipped migrations do not apply.
   */
  custom: boolean;
  /** The three table names, schema-qualified when a schema is given. */
  tables: string[];
}

/** An empty option is the same as none (an exported but empty environment variable). */
function given(value: string | undefined): string | undefined {
  return value === undefined || value.length === 0 ? undefined : value;
}

/** The saver options for a URL and the layout options, checked against the kind of database. */
export function resolveLayout(url: string, options: LayoutOptions): Layout {
  const family = familyOf(url);
  const prefix = given(options.tablePrefix);
  const schema = given(options.schema);
  const migrationsTable = given(options.migrationsTable);
  const migrationsSchema = given(options.migrationsSchema);
  if (family !== "postgres" && schema !== undefined) {
    throw new UsageError("--schema is for PostgreSQL only (MySQL and SQLite tables take a --table-prefix)");
  }
  if (family !== "postgres" && migrationsSchema !== undefined) {
    throw new UsageError("--migrations-schema is for PostgreSQL only");
  }
  if (migrationsTable === "__drizzle_migrations") {
    throw new UsageError('--migrations-table must not be drizzle\'s own "__drizzle_migrations"');
  }
  // A prefix means the application's own tables (recipe A), in `schema` when one is given;
  // a schema alone is the saver's `schema` option: the shipped migrations' tables there.
  const custom = prefix !== undefined;
  if (custom && (migrationsTable !== undefined || migrationsSchema !== undefined)) {
    throw new UsageError(
      "--migrations-table and --migrations-schema name the table of the shipped migrations; tables with a " +
        "--table-prefix are migrated by the application, so they take neither",
    );
  }
  const names = ["checkpoints", "checkpoint_blobs", "checkpoint_writes"].map(
    (name) => `${schema === undefined ? "" : `${schema}.`}${prefix ?? ""}${name}`,
  );
  if (!custom) return { saver: { schema, migrationsTable, migrationsSchema }, custom, tables: names };
  const tables =
    family === "postgres"
      ? pgTables({ prefix, schema })
      : family === "mysql"
        ? mysqlTables({ prefix })
        : sqliteTables({ prefix });
  return { saver: { tables }, custom, tables: names };
}
