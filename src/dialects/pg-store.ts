/**
 * The store's SQL on PostgreSQL: jsonb members read with `->`/`->>`, strings compared
 * under the "C" collation, the upsert as ON CONFLICT DO UPDATE.
 */
import { sql } from "drizzle-orm";
import type { PgStoreTables } from "../schema/pg.js";
import { MAX_NESTING_DEPTH } from "../serde/bounds.js";
import type { Executor } from "../sql/executor.js";
import { isConflict } from "./pg.js";
import { onConflictUpsert, op, retriedRun, transactionUnit, upsertColumns } from "./store-common.js";
import type { StoreDialect, ValueField } from "./store-dialect.js";

export function pgStoreDialect(executor: Executor, tables: PgStoreTables): StoreDialect {
  const items = tables.storeItems;
  const columns = { table: items, ...items };
  const field = (key: string): ValueField => {
    const member = sql`(${items.value} -> cast(${key} as text))`;
    const typed = (kind: string) => sql`jsonb_typeof(${member}) = ${sql.raw(`'${kind}'`)}`;
    return {
      exists: () => sql`${member} is not null`,
      // Containment of {key: value}: typed as jsonb equality is (a scalar never contains
      // another type, nor an array a scalar below the top level), never NULL, and cheaper
      // per row than extracting the member.
      equals: (value) => sql`${items.value} @> cast(${JSON.stringify({ [key]: value })} as jsonb)`,
      // One parameter for the whole list, compared by jsonb equality (typed; numbers by value).
      oneOf: (values) =>
        values.length === 0
          ? sql`(1 = 0)`
          : sql`coalesce(${member} in (select jsonb_array_elements(cast(${JSON.stringify(values)} as jsonb))), false)`,
      text: (comparison, value) =>
        sql`(case when ${typed("string")} then ${items.value} ->> cast(${key} as text) end) collate "C" ${op(comparison)} cast(${value} as text) collate "C"`,
      number: (comparison, value) =>
        sql`(case when ${typed("number")} then cast(${items.value} ->> cast(${key} as text) as double precision) end) ${op(comparison)} cast(${value} as double precision)`,
    };
  };
  return {
    name: "postgres",
    maxJsonDepth: MAX_NESTING_DEPTH,
    executor,
    columns,
    text: (value) => value,
    json: (text) => sql`cast(${text} as jsonb)`,
    // As text: drivers parse jsonb each their own way (or not at all).
    valueOut: sql`cast(${items.value} as text)`,
    valueText: sql`cast(${items.value} as text) collate "C"`,
    valueIsString: sql`jsonb_typeof(${items.value}) = 'string'`,
    field,
    upsertColumns: upsertColumns(columns),
    upsert: onConflictUpsert(columns),
    unit: transactionUnit(executor, isConflict),
    runAlone: retriedRun(executor, isConflict),
    // A statement locks rows in the order its plan meets them (a bitmap scan: where they lie
    // on disk); a locking subquery sorts them first. "C" columns: in byte order, as inLockOrder.
    inKeyOrder: (where) =>
      sql`(${items.nsPath}, ${items.key}) in (select ${items.nsPath}, ${items.key} from ${items} where ${where}
        order by ${items.nsPath}, ${items.key} for update)`,
  };
}
