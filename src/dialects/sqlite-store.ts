/**
 * The store's SQL on SQLite (better-sqlite3, libSQL, D1): members found with json_each by
 * key (any key, no JSON path quoting), the upsert as ON CONFLICT DO UPDATE, and on
 * batch-only D1 a batch's writes as one atomic batch.
 */
import { type Column, type SQL, sql } from "drizzle-orm";
import type { SQLiteStoreTables } from "../schema/sqlite.js";
import type { Executor } from "../sql/executor.js";
import { anyOf } from "../sql/statements.js";
import { retryOnConflict } from "./common-sql.js";
import { SQLITE_JSON_DEPTH } from "./sqlite.js";
import { isBusy } from "./sqlite-units.js";
import { byType, onConflictUpsert, op, retriedRun, transactionUnit, upsertColumns } from "./store-common.js";
import type { Scalar, StoreDialect, ValueField } from "./store-dialect.js";

/** A top-level member of an item's value, found with json_each by key. */
function valueField(column: Column, key: string): ValueField {
  const member = (what: string, where: SQL = sql``) =>
    sql`(select ${sql.raw(what)} from json_each(${column}) as m where m.key = ${key}${where})`;
  // The list as one JSON parameter, whatever its length (D1 binds at most 100 and takes
  // at most 100 KB of text); the member compared within its type (text as bytes, numbers by value).
  const oneOf = (values: readonly Scalar[]) => {
    const { strings, numbers, booleans, hasNull } = byType(values);
    // One value of a type is compared as it is; more go through the JSON list.
    const listed = (types: string, ofType: readonly Scalar[]) =>
      ofType.length === 1
        ? sql`= ${ofType[0]}`
        : sql`in (select l.value from json_each(${JSON.stringify(values)}) as l where l.type in (${sql.raw(types)}))`;
    const tests: SQL[] = [];
    if (strings.length > 0) tests.push(sql`(m.type = 'text' and m.value ${listed("'text'", strings)})`);
    if (numbers.length > 0) {
      tests.push(sql`(m.type in ('integer', 'real') and m.value ${listed("'integer', 'real'", numbers)})`);
    }
    for (const flag of booleans) tests.push(sql`m.type = ${sql.raw(flag ? "'true'" : "'false'")}`);
    if (hasNull) tests.push(sql`m.type = 'null'`);
    return sql`exists (select 1 from json_each(${column}) as m where m.key = ${key} and ${anyOf(tests)})`;
  };
  return {
    exists: () => sql`exists ${member("1")}`,
    equals: (value) => oneOf([value]),
    oneOf,
    text: (comparison, value) => sql`${member("m.value", sql` and m.type = 'text'`)} ${op(comparison)} ${value}`,
    number: (comparison, value) =>
      sql`${member("m.value", sql` and m.type in ('integer', 'real')`)} ${op(comparison)} ${value}`,
  };
}

export function sqliteStoreDialect(executor: Executor, tables: SQLiteStoreTables): StoreDialect {
  const items = tables.storeItems;
  const columns = { table: items, ...items };
  const batch = executor.batch?.bind(executor);
  const transactional = transactionUnit(executor, isBusy);
  return {
    name: "sqlite",
    maxJsonDepth: SQLITE_JSON_DEPTH,
    executor,
    columns,
    text: (value) => value,
    json: (text) => sql`${text}`,
    valueOut: sql`${items.value}`,
    valueText: sql`${items.value}`,
    // JSON text: an object starts with "{", a string (sealed) with a quote.
    valueIsString: sql`substr(${items.value}, 1, 1) = '"'`,
    field: (key) => valueField(items.value, key),
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
    runAlone: retriedRun(executor, isBusy),
    // SQLite locks the whole database, not rows: no order to keep.
    inKeyOrder: (where) => where,
  };
}
