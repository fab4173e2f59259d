/**
 * The store's SQL on SQLite (better-sqlite3, libSQL, D1): members found with json_each by
 * key (any key, no JSON path quoting), the upsert as ON CONFLICT DO UPDATE, and on
 * batch-only D1 a batch's writes as one atomic batch.
 */
import { type SQL, sql } from "drizzle-orm";
import type { SQLiteStoreTables } from "../schema/sqlite.js";
import type { Executor } from "../sql/executor.js";
import { retryOnConflict } from "./common-sql.js";
import { isBusy } from "./sqlite-units.js";
import { type FieldKind, onConflictUpsert, op, transactionUnit, typedEquals, upsertColumns } from "./store-common.js";
import type { Comparison, StoreDialect, ValueField } from "./store-dialect.js";

const KINDS: Record<FieldKind, string> = {
  string: "'text'",
  number: "'integer', 'real'",
  boolean: "'true', 'false'",
  null: "'null'",
};

export function sqliteStoreDialect(executor: Executor, tables: SQLiteStoreTables): StoreDialect {
  const items = tables.storeItems;
  const columns = { table: items, ...items };
  const field = (key: string): ValueField => {
    const member = (what: string, where: SQL = sql``) =>
      sql`(select ${sql.raw(what)} from json_each(${items.value}) as m where m.key = ${key}${where})`;
    const kind = member("m.type");
    const is = (k: FieldKind) => sql`${kind} in (${sql.raw(KINDS[k])})`;
    const text = (comparison: Comparison | "=", value: string) =>
      sql`${member("m.value", sql` and m.type = 'text'`)} ${op(comparison)} ${value}`;
    const number = (comparison: Comparison | "=", value: number) =>
      sql`${member("m.value", sql` and m.type in ('integer', 'real')`)} ${op(comparison)} ${value}`;
    const boolean = (value: boolean) => sql`${kind} = ${sql.raw(value ? "'true'" : "'false'")}`;
    return {
      exists: () => sql`exists ${member("1")}`,
      equals: (value) => typedEquals({ is, text, number, boolean }, value),
      text,
      number,
    };
  };
  const batch = executor.batch?.bind(executor);
  const transactional = transactionUnit(executor, isBusy);
  return {
    name: "sqlite",
    executor,
    columns,
    text: (value) => value,
    json: (text) => sql`${text}`,
    valueOut: sql`${items.value}`,
    valueText: sql`${items.value}`,
    // JSON text: an object starts with "{", a string (sealed) with a quote.
    valueIsString: sql`substr(${items.value}, 1, 1) = '"'`,
    field,
    upsertColumns: upsertColumns(columns),
    upsert: onConflictUpsert(columns),
    unit: batch
      ? // Batch-only (D1): no reads between a batch's statements; the reads come first.
        async (reads, writes) => {
          const result = reads ? await reads(executor) : undefined;
          if (writes.length > 0) await retryOnConflict(isBusy, () => batch(writes));
          return result;
        }
      : transactional,
  };
}
