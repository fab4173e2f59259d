/** Where the shipped migrations are, and what a migrations folder holds. */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { CheckpointSaverError, type MigrationInfo } from "../../errors.js";

/** The database families that ship migrations, by folder name under migrations/. */
export type MigrationsFamily = "pg" | "mysql" | "sqlite";

/**
 * The folder of the shipped migrations of one database family. This module is src/ in
 * the repository and a file (or chunk) of dist/ or dist/cli/ in the package, in its ESM
 * or its CommonJS build, so the folder is looked up from here upwards rather than at a
 * fixed relative path. The build turns `import.meta.url` into the CommonJS equivalent.
 */
export function findMigrationsFolder(family: MigrationsFamily): string {
  const journal = join("migrations", family, "meta", "_journal.json");
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, journal))) return join(dir, "migrations", family);
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  // A bundler that copied this module without the package's files lands here.
  throw new CheckpointSaverError(
    `the migrations/${family} folder of langgraph-checkpoint-drizzle was not found above ${dirname(fileURLToPath(import.meta.url))}`,
  );
}

/** The migrations of a folder, from drizzle-kit's journal, oldest first. */
export function journal(folder: string): MigrationInfo[] {
  const { entries } = JSON.parse(readFileSync(join(folder, "meta", "_journal.json"), "utf8")) as {
    entries: { tag: string; when: number }[];
  };
  return entries.map((entry) => ({ tag: entry.tag, createdAt: entry.when }));
}
