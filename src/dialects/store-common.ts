/** Pieces of the store dialects (pg-store.ts, mysql-store.ts, sqlite-store.ts) that they share. */
import { type Column, type SQL, sql } from "drizzle-orm";
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

/**
 * The `created_at` an upsert leaves: the existing row's, unless that row had expired by the
 * put's time (`inserted(column)`: the inserted row's value), which makes the put a new item,
 * as it is once the sweeper has removed the row. `existing(column)`: the row before the put.
 */
export function keptCreatedAt(c: StoreColumns, existing: (column: Column) => SQL, inserted: (column: Column) => SQL) {
  return sql`case when ${existing(c.expiresAt)} <= ${inserted(c.updatedAt)} then ${inserted(c.createdAt)} else ${existing(c.createdAt)} end`;
}

/** `StoreDialect.upsert` where the family speaks `INSERT ... ON CONFLICT DO UPDATE` (PostgreSQL, SQLite). */
export function onConflictUpsert(c: StoreColumns) {
  const name = (column: Column) => sql.identifier(column.name);
  // Every expression of DO UPDATE reads the existing row as it was, whatever the order.
  const createdAt = keptCreatedAt(
    c,
    (column) => sql`${column}`,
    (column) => sql`excluded.${name(column)}`,
  );
  return (rows: unknown[][]) =>
    onConflictInsert(
      {
        table: c.table,
        columns: upsertColumns(c),
        rows,
        conflictTarget: [c.nsPath, c.key],
        update: replacedColumns(c),
      },
      [sql`${name(c.createdAt)} = ${createdAt}`],
    );
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
