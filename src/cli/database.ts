/**
 * Opening the database a command names (--url or LANGGRAPH_CHECKPOINT_URL): a saver that
 * is always closed afterwards, and the checks that the checkpoint tables exist.
 */
import { existsSync } from "node:fs";
import { sqliteFile } from "../database-family.js";
import { DriverNotInstalledError, DrizzleSaver, type DrizzleSaverOptions, InvalidInputError } from "../index.js";
import { isMissingTableError } from "../sql/missing-table.js";
import { CliError, EXIT_FAILURE, UsageError } from "./errors.js";
import type { CliIo } from "./io.js";
import { encryptionFromEnv } from "./keys.js";
import { type Layout, resolveLayout } from "./layout.js";
import { openSqliteReadOnly } from "./sqlite-readonly.js";

export const URL_ENV = "LANGGRAPH_CHECKPOINT_URL";

/** The SQLite file a URL names, or undefined for a server URL (the rules of `DrizzleSaver.fromUrl`). */
export function sqlitePath(url: string): string | undefined {
  try {
    return sqliteFile(url);
  } catch {
    return ""; // names no file: fromUrl says so
  }
}

export function requireUrl(url: string | undefined): string {
  if (url === undefined || url.trim().length === 0) {
    throw new UsageError(`no database URL: pass --url or set ${URL_ENV}`);
  }
  return url.trim();
}

export interface OpenOptions {
  /** Creating a missing SQLite file is what `migrate` does; every other command refuses. */
  create?: boolean;
  /** Fail unless the checkpoint tables exist (every command but migrate and status). */
  requireSchema?: boolean;
  /** Commands that only read: SQLite is opened read-only (no WAL switch, no file created). */
  readOnly?: boolean;
  /** Where the tables are; the saver's defaults when omitted. */
  layout?: Layout;
  /** More options of the saver (the Spider shards for migrate). */
  saverOptions?: DrizzleSaverOptions;
  /** Where a warning goes (pending migrations): the run's stderr. */
  io: CliIo;
}

/** Opens the database; `run` gets the saver, which is always closed afterwards. */
export async function withSaver<T>(
  url: string,
  options: OpenOptions,
  run: (saver: DrizzleSaver) => Promise<T>,
): Promise<T> {
  const path = sqlitePath(url);
  if (!options.create && path !== undefined && path !== ":memory:" && path.length > 0 && !existsSync(path)) {
    throw new CliError(`no SQLite database at "${path}" (the migrate command creates one)`);
  }
  const layout = options.layout ?? resolveLayout(url, {});
  // Keys from the environment: show and history then read sealed values, rekey re-seals them.
  const encryption = encryptionFromEnv();
  const saverOptions = { ...layout.saver, ...(encryption ? { encryption } : {}), ...options.saverOptions };
  let opened: { saver: DrizzleSaver; close(): Promise<void> };
  try {
    if (options.readOnly && path !== undefined && path !== ":memory:" && path.length > 0) {
      opened = await openSqliteReadOnly(path, saverOptions);
    } else {
      const saver = await DrizzleSaver.fromUrl(url, saverOptions);
      opened = { saver, close: () => saver.close() };
    }
  } catch (error) {
    throw openFailure(error);
  }
  try {
    if (options.requireSchema) await requireSchema(opened.saver, layout, options.io);
    return await run(opened.saver);
  } finally {
    await opened.close().catch(() => {});
  }
}

/** The error to report when the database cannot be opened. */
export function openFailure(error: unknown): unknown {
  // fromUrl rejects a URL it cannot use with an InvalidInputError (better-sqlite3: a TypeError) (unknown scheme, no file name, missing directory).
  if (error instanceof TypeError || error instanceof InvalidInputError) return new UsageError(error.message);
  // The drivers are optional peer dependencies, imported for the URL's scheme only.
  if (error instanceof DriverNotInstalledError) return new CliError(error.message, EXIT_FAILURE, { cause: error });
  return error;
}

async function requireSchema(saver: DrizzleSaver, layout: Layout, io: CliIo): Promise<void> {
  if (layout.custom) {
    if (!(await customTablesExist(saver))) throw missingCustomTables(layout);
    return;
  }
  const { applied, pending } = await saver.migrationStatus();
  if (applied.length === 0) {
    throw new CliError("the database has no checkpoint tables yet: run the migrate command first");
  }
  if (pending.length > 0) {
    io.stderr.write(
      `warning: ${pending.length} pending migration${pending.length === 1 ? "" : "s"} (${pending.map((m) => m.tag).join(", ")}): run the migrate command\n`,
    );
  }
}

/** Whether an application's tables (a prefix) exist: one cheap read that fails when they do not. */
export async function customTablesExist(saver: DrizzleSaver): Promise<boolean> {
  try {
    for await (const _ of saver.listThreads({ limit: 1 })) break;
    return true;
  } catch (error) {
    if (isMissingTableError(error)) return false;
    throw error;
  }
}

export function missingCustomTables(layout: Layout): CliError {
  return new CliError(
    `the tables ${layout.tables.join(", ")} do not exist: with a table prefix the application creates them with its own drizzle-kit migrations`,
  );
}
