/**
 * The store's SQL on MySQL and MariaDB: members read through JSON paths both servers
 * accept, strings compared as bytes, the upsert as ON DUPLICATE KEY UPDATE.
 */
import { type SQL, sql } from "drizzle-orm";
import { MYSQL_STORE_KEY_BYTES, MYSQL_STORE_PATH_BYTES, type MySqlStoreTables } from "../schema/mysql.js";
import type { Executor } from "../sql/executor.js";
import { insertValues } from "./common-sql.js";
import { isConflict } from "./mysql-units.js";
import { type FieldKind, op, replacedColumns, transactionUnit, typedEquals, upsertColumns } from "./store-common.js";
import type { Comparison, StoreDialect, ValueField } from "./store-dialect.js";

const KINDS: Record<FieldKind, string> = {
  string: "'STRING'",
  number: "'INTEGER', 'UNSIGNED INTEGER', 'DOUBLE', 'DECIMAL'",
  boolean: "'BOOLEAN'",
  null: "'NULL'",
};

export function mysqlStoreDialect(executor: Executor, tables: MySqlStoreTables): StoreDialect {
  const items = tables.storeItems;
  const columns = { table: items, ...items };
  const field = (key: string): ValueField => {
    // The key as a quoted JSON path member ($."a.b"), sent as bytes: as text it would carry
    // the connection's collation (see jsonPath in mysql.ts).
    const path = sql`convert(${Buffer.from(`$.${JSON.stringify(key)}`, "utf8")} using utf8mb4)`;
    const member = sql`json_extract(${items.value}, ${path})`;
    const typed = (kind: FieldKind): SQL => sql`json_type(${member}) in (${sql.raw(KINDS[kind])})`;
    const text = (comparison: Comparison | "=", value: string) =>
      sql`(case when ${typed("string")} then cast(json_unquote(${member}) as binary) end) ${op(comparison)} cast(${value} as binary)`;
    const number = (comparison: Comparison | "=", value: number) =>
      sql`(case when ${typed("number")} then json_unquote(${member}) + 0e0 end) ${op(comparison)} ${value}`;
    const boolean = (value: boolean) =>
      sql`(${typed("boolean")} and json_unquote(${member}) = ${sql.raw(value ? "'true'" : "'false'")})`;
    return {
      // A JSON null member extracts as JSON null, not SQL NULL.
      exists: () => sql`${member} is not null`,
      equals: (value) => typedEquals({ is: typed, text, number, boolean }, value),
      text,
      number,
    };
  };
  const written = upsertColumns(columns);
  return {
    name: "mysql",
    executor,
    columns,
    limits: { pathBytes: MYSQL_STORE_PATH_BYTES, keyBytes: MYSQL_STORE_KEY_BYTES },
    text: (value) => Buffer.from(value, "utf8"),
    json: (text) => sql`${text}`,
    valueOut: sql`${items.value}`,
    valueText: sql`cast(cast(${items.value} as char) as binary)`,
    valueIsString: sql`json_type(${items.value}) = 'STRING'`,
    field,
    upsertColumns: written,
    upsert: (rows) =>
      sql`${insertValues(items, written, rows)} on duplicate key update ${sql.join(
        replacedColumns(columns).map(
          (column) => sql`${sql.identifier(column.name)} = values(${sql.identifier(column.name)})`,
        ),
        sql`, `,
      )}`,
    unit: transactionUnit(executor, isConflict),
  };
}
