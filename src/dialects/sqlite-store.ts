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
import { onConflictUpsert, op, transactionUnit, upsertColumns } from "./store-common.js";
import type { FieldKind, StoreDialect, ValueField } from "./store-dialect.js";

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
    return {
      exists: () => sql`exists ${member("1")}`,
      is: (k) => sql`${kind} in (${sql.raw(KINDS[k])})`,
      text: (comparison, value) => sql`${member("m.value", sql` and m.type = 'text'`)} ${op(comparison)} ${value}`,
      number: (comparison, value) =>
        sql`${member("m.value", sql` and m.type in ('integer', 'real')`)} ${op(comparison)} ${value}`,
      boolean: (value) => sql`${kind} = ${sql.raw(value ? "'true'" : "'false'")}`,
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
