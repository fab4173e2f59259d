import { existsSync } from "node:fs";
import { sqliteFile } from "../drivers/connect.js";
import { DriverNotInstalledError, DrizzleSaver, type DrizzleSaverOptions, InvalidInputError } from "../index.js";
import { CliError, EXIT_FAILURE, UsageError } from "./errors.js";

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
  /** Options of the saver (the Spider shards for migrate). */
  saverOptions?: DrizzleSaverOptions;
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
  let saver: DrizzleSaver;
  try {
    saver = await DrizzleSaver.fromUrl(url, options.saverOptions);
  } catch (error) {
    // fromUrl rejects a URL it cannot use with an InvalidInputError (better-sqlite3: a TypeError) (unknown scheme, no file name, missing directory).
    if (error instanceof TypeError || error instanceof InvalidInputError) throw new UsageError(error.message);
    // The drivers are optional peer dependencies, imported for the URL's scheme only.
    if (error instanceof DriverNotInstalledError) throw new CliError(error.message, EXIT_FAILURE, { cause: error });
    throw error;
  }
  try {
    if (options.requireSchema) await requireSchema(saver);
    return await run(saver);
  } finally {
    await saver.close().catch(() => {});
  }
}

async function requireSchema(saver: DrizzleSaver): Promise<void> {
  const { applied, pending } = await saver.migrationStatus();
  if (applied.length === 0) {
    throw new CliError("the database has no checkpoint tables yet: run the migrate command first");
  }
  if (pending.length > 0) {
    process.stderr.write(
      `warning: ${pending.length} pending migration${pending.length === 1 ? "" : "s"} (${pending.map((m) => m.tag).join(", ")}): run the migrate command\n`,
    );
  }
}
