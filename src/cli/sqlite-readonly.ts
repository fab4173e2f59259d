/**
 * Opens an SQLite file read-only for the commands that only read, so that reading never
 * switches the file to WAL nor creates it.
 */
import type BetterSqlite3 from "better-sqlite3";
import { DrizzleSaver, type DrizzleSaverOptions } from "../index.js";
import { CliError, EXIT_FAILURE } from "./errors.js";

/**
 * A saver over an SQLite file opened read-only, for the commands that only read.
 * `DrizzleSaver.fromUrl` opens files for writing and switches them to WAL, which
 * changes the file's header; a read-only connection cannot change the file, never
 * creates one, and works in a directory the user cannot write to.
 */
export async function openSqliteReadOnly(
  path: string,
  options: DrizzleSaverOptions,
): Promise<{ saver: DrizzleSaver; close(): Promise<void> }> {
  const { default: Database } = await import("better-sqlite3");
  const { drizzle } = await import("drizzle-orm/better-sqlite3");
  const client = new Database(path, { readonly: true, fileMustExist: true });
  try {
    // A writer of another process may hold the lock for a moment: wait for it rather than fail.
    client.pragma("busy_timeout = 10000");
    probe(client, path);
    const saver = new DrizzleSaver(drizzle(client), options);
    return {
      saver,
      close: async () => {
        client.close();
      },
    };
  } catch (error) {
    client.close();
    throw error;
  }
}

/**
 * Reads the schema once, so a file that cannot be read fails here with a useful
 * message. A WAL-mode file (what the saver's own connections make) can only be read
 * where SQLite can create its "-shm" index beside it; better-sqlite3 offers no
 * `immutable` open that would avoid it.
 */
function probe(client: BetterSqlite3.Database, path: string): void {
  try {
    client.prepare("select count(*) from sqlite_master").get();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "SQLITE_READONLY_DIRECTORY" || code === "SQLITE_CANTOPEN") {
      throw new CliError(
        `cannot read "${path}" without writing: it is a WAL-mode database, and SQLite must create "${path}-shm" in a directory that is not writable (allow writes to the directory, or switch the file to journal_mode=DELETE)`,
        EXIT_FAILURE,
        { cause: error },
      );
    }
    throw error;
  }
}
