import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { MigrationMeta } from "drizzle-orm/migrator";
import { readMigrationFiles } from "drizzle-orm/migrator";

export type { MigrationMeta };

/**
 * The journal entries of a migrations folder that are not yet recorded. An entry is
 * identified by its journal timestamp (`folderMillis`), not by being newer than the
 * newest recorded row, so two histories sharing a table never hide each other.
 */
export function pendingMigrations(folder: string, appliedMillis: Iterable<unknown>): MigrationMeta[] {
  const applied = new Set([...appliedMillis].map((value) => Number(value)));
  return readMigrationFiles({ migrationsFolder: folder }).filter((m) => !applied.has(m.folderMillis));
}

/** The database's own message, below drizzle's "Failed query: <the whole SQL>" wrapper. */
function databaseMessage(error: unknown): string {
  let current = error;
  while (
    current instanceof Error &&
    current.cause instanceof Error &&
    /^Failed (query|to run the query)/.test(current.message)
  ) {
    current = current.cause;
  }
  return current instanceof Error ? current.message : String(current);
}

/** A migration that failed; `createdAt` is its journal timestamp, `cause` the database's error. */
export class MigrationError extends Error {
  override name = "MigrationError";
  constructor(
    readonly createdAt: number,
    cause: unknown,
    /** Filled in by the saver from the journal. */
    readonly migration?: MigrationInfo,
  ) {
    super(`migration ${migration?.tag ?? createdAt} failed: ${databaseMessage(cause)}`, { cause });
  }
}

/** Runs one migration's statements, turning a failure into a {@link MigrationError}. */
export function applying<T>(migration: MigrationMeta, run: () => T): T {
  try {
    const result = run();
    if (result instanceof Promise) {
      return result.catch((error: unknown) => {
        throw new MigrationError(migration.folderMillis, error);
      }) as T;
    }
    return result;
  } catch (error) {
    throw new MigrationError(migration.folderMillis, error);
  }
}

/** A stable 31-bit number naming the advisory lock of one migrations table. */
export function lockNumber(name: string): number {
  let hash = 0;
  for (const char of name) hash = (Math.imul(hash, 31) + (char.codePointAt(0) ?? 0)) | 0;
  return hash & 0x7fffffff;
}

export interface MigrationInfo {
  /** File name without ".sql", e.g. "0000_init". */
  tag: string;
  /** The journal timestamp that identifies the migration. */
  createdAt: number;
}

/** The migrations of a folder, from drizzle-kit's journal, oldest first. */
export function journal(folder: string): MigrationInfo[] {
  const { entries } = JSON.parse(readFileSync(join(folder, "meta", "_journal.json"), "utf8")) as {
    entries: { tag: string; when: number }[];
  };
  return entries.map((entry) => ({ tag: entry.tag, createdAt: entry.when }));
}
