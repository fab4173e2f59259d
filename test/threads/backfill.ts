import { readFileSync } from "node:fs";
import type { DialectName } from "../helpers/databases.js";

const MIGRATION = {
  postgres: "migrations/pg/0002_thread_table.sql",
  mysql: "migrations/mysql/0002_thread_table.sql",
  sqlite: "migrations/sqlite/0001_thread_table.sql",
} as const;

/**
 * The shipped migration's backfill statement (its last one), which fills
 * checkpoint_threads from the checkpoints table: for tables loaded by bulk SQL.
 */
export function threadBackfillSql(dialect: DialectName): string {
  const text = readFileSync(new URL(`../../${MIGRATION[dialect]}`, import.meta.url), "utf8");
  const last = text.split("--> statement-breakpoint").at(-1) ?? "";
  return last
    .split("\n")
    .filter((line) => !line.trimStart().startsWith("--"))
    .join("\n")
    .trim();
}
