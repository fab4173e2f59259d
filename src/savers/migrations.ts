import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { MigrationMeta } from "drizzle-orm/migrator";
import { readMigrationFiles } from "drizzle-orm/migrator";
import { MigrationError, type MigrationInfo } from "../errors.js";

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

/** The migrations of a folder, from drizzle-kit's journal, oldest first. */
export function journal(folder: string): MigrationInfo[] {
  const { entries } = JSON.parse(readFileSync(join(folder, "meta", "_journal.json"), "utf8")) as {
    entries: { tag: string; when: number }[];
  };
  return entries.map((entry) => ({ tag: entry.tag, createdAt: entry.when }));
}
