/** What PostgreSQL drivers return for a statement, read the same way for each: its rows and its changed count. */
import type { Row } from "../sql/executor.js";

/** Rows of a PostgreSQL result, whatever the driver wraps them in. */
export function rowsOf(result: unknown): Row[] {
  // postgres.js returns the rows themselves; node-postgres and PGlite wrap them in { rows }.
  const rows: unknown = Array.isArray(result) ? result : (result as { rows?: unknown } | undefined)?.rows;
  // Seen while connections were being killed: never read a partial answer as data.
  // Indexes, not some(): a result cut short can be a sparse array, whose holes some() skips.
  if (!Array.isArray(rows) || Array.from(rows).some((row) => row === null || typeof row !== "object")) {
    throw new Error("PostgreSQL connection lost: the driver returned an incomplete result");
  }
  return rows as Row[];
}

/** Rows a PostgreSQL statement changed, whatever the driver calls the count. */
export function changedRows(result: unknown): number {
  // postgres.js puts the count on the result array; node-postgres has rowCount, PGlite affectedRows.
  const { count, rowCount, affectedRows } = result as { count?: number; rowCount?: number; affectedRows?: number };
  return Number(count ?? rowCount ?? affectedRows ?? 0);
}
