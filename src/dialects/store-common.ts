/** Pieces of the store dialects (pg-store.ts, mysql-store.ts, sqlite-store.ts) that they share. */
import { type SQL, sql } from "drizzle-orm";
import type { Executor, Runner } from "../sql/executor.js";
import type { Statement } from "../sql/statements.js";
import { onConflictInsert, retryOnConflict } from "./common-sql.js";
import type { Comparison, Scalar, StoreColumns } from "./store-dialect.js";

/** The comparison operator as SQL text (a closed set, never user text). */
export const op = (comparison: Comparison): SQL => sql.raw(comparison);

/** A filter's values by JSON type: each dialect compares a type with the members of that type only. */
export function byType(values: readonly Scalar[]): {
  strings: string[];
  numbers: number[];
  booleans: boolean[];
  hasNull: boolean;
} {
  const strings = values.filter((value): value is string => typeof value === "string");
  const numbers = values.filter((value): value is number => typeof value === "number");
  const booleans = [true, false].filter((flag) => values.includes(flag));
  return { strings, numbers, booleans, hasNull: values.includes(null) };
}

/** The columns an upsert writes, in order. */
export const upsertColumns = (c: StoreColumns) => [
  c.nsPath,
  c.key,
  c.value,
  c.embeddings,
  c.createdAt,
  c.updatedAt,
  c.expiresAt,
  c.ttlMinutes,
];

/** The columns an upsert replaces on an existing item: all but the key and `created_at`. */
export const replacedColumns = (c: StoreColumns) => [c.value, c.embeddings, c.updatedAt, c.expiresAt, c.ttlMinutes];

/** `StoreDialect.upsert` where the family speaks `INSERT ... ON CONFLICT DO UPDATE` (PostgreSQL, SQLite). */
export function onConflictUpsert(c: StoreColumns) {
  return (rows: unknown[][]) =>
    onConflictInsert({
      table: c.table,
      columns: upsertColumns(c),
      rows,
      conflictTarget: [c.nsPath, c.key],
      update: replacedColumns(c),
    });
}

/** `StoreDialect.runAlone`: one statement, again on a conflict. */
export function retriedRun(executor: Executor, isConflict: (error: unknown) => boolean) {
  return (statement: Statement) => retryOnConflict(isConflict, () => executor.run(statement));
}

/** `StoreDialect.unit` on a driver with interactive transactions. */
export function transactionUnit(executor: Executor, isConflict: (error: unknown) => boolean) {
  return <T>(reads: ((runner: Runner) => Promise<T>) | undefined, writes: Statement[]): Promise<T | undefined> => {
    // One statement is atomic on its own: no BEGIN and COMMIT round trips.
    if (!reads && writes.length === 1) {
      return retryOnConflict(isConflict, async () => {
        await executor.run(writes[0]);
        return undefined;
      });
    }
    return retryOnConflict(isConflict, () =>
      executor.transaction(async (tx) => {
        const result = reads ? await reads(tx) : undefined;
        for (const write of writes) await tx.run(write);
        return result;
      }),
    );
  };
}
