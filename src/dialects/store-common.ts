/** Pieces of the store dialects (pg-store.ts, mysql-store.ts, sqlite-store.ts) that they share. */
import { type SQL, sql } from "drizzle-orm";
import type { Executor, Runner } from "../sql/executor.js";
import type { Statement } from "../sql/statements.js";
import { onConflictInsert, retryOnConflict } from "./common-sql.js";
import type { Comparison, Scalar, StoreColumns } from "./store-dialect.js";

/** The comparison operator as SQL text (a closed set, never user text). */
export const op = (comparison: Comparison | "="): SQL => sql.raw(comparison);

/** The JSON types a filter tells apart. */
export type FieldKind = "string" | "number" | "boolean" | "null";

/** A dialect's typed tests of one member, from which {@link typedEquals} builds equality. */
export interface TypedTests {
  is(kind: FieldKind): SQL;
  text(op: "=", value: string): SQL;
  number(op: "=", value: number): SQL;
  boolean(value: boolean): SQL;
}

/** `ValueField.equals` from typed tests that may be NULL (a missing member): made false instead. */
export function typedEquals(tests: TypedTests, value: Scalar): SQL {
  let test: SQL;
  if (value === null) test = tests.is("null");
  else if (typeof value === "string") test = tests.text("=", value);
  else if (typeof value === "number") test = tests.number("=", value);
  else test = tests.boolean(value);
  return sql`coalesce(${test}, (1 = 0))`;
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
