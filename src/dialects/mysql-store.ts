/**
 * The store's SQL on MySQL and MariaDB: members read through JSON paths both servers
 * accept, strings compared as bytes, the upsert as ON DUPLICATE KEY UPDATE.
 */
import { type Column, type SQL, sql } from "drizzle-orm";
import { MYSQL_STORE_KEY_BYTES, MYSQL_STORE_PATH_BYTES, type MySqlStoreTables } from "../schema/mysql.js";
import type { Executor } from "../sql/executor.js";
import { anyOf, valueList } from "../sql/statements.js";
import { insertValues } from "./common-sql.js";
import { MARIADB_JSON_DEPTH } from "./mysql.js";
import { isConflict, packetSizeCheck } from "./mysql-units.js";
import {
  byType,
  keptCreatedAt,
  op,
  replacedColumns,
  retriedRun,
  transactionUnit,
  upsertColumns,
} from "./store-common.js";
import type { Scalar, StoreDialect, ValueField } from "./store-dialect.js";

/** json_type's names of the JSON types a filter tells apart. */
const KINDS = {
  string: "'STRING'",
  number: "'INTEGER', 'UNSIGNED INTEGER', 'DOUBLE', 'DECIMAL'",
  boolean: "'BOOLEAN'",
  null: "'NULL'",
};

/** A top-level member of an item's value, read through a JSON path. */
function valueField(column: Column, key: string): ValueField {
  // The key as a quoted JSON path member ($."a.b"), sent as bytes: as text it would carry
  // the connection's collation (see jsonPath in mysql.ts).
  const path = sql`convert(${Buffer.from(`$.${JSON.stringify(key)}`, "utf8")} using utf8mb4)`;
  const member = sql`json_extract(${column}, ${path})`;
  const typed = (kind: keyof typeof KINDS): SQL => sql`json_type(${member}) in (${sql.raw(KINDS[kind])})`;
  const asText = sql`(case when ${typed("string")} then cast(json_unquote(${member}) as binary) end)`;
  const asNumber = sql`(case when ${typed("number")} then json_unquote(${member}) + 0e0 end)`;
  // Within a type: strings as bytes, numbers as doubles; NULL (no such member) made false.
  const oneOf = (values: readonly Scalar[]) => {
    const { strings, numbers, booleans, hasNull } = byType(values);
    const tests: SQL[] = [];
    if (strings.length > 0) tests.push(sql`${asText} in (${valueList(strings.map((v) => Buffer.from(v, "utf8")))})`);
    if (numbers.length > 0) tests.push(sql`${asNumber} in (${valueList(numbers)})`);
    for (const flag of booleans) {
      tests.push(sql`(${typed("boolean")} and json_unquote(${member}) = ${sql.raw(flag ? "'true'" : "'false'")})`);
    }
    if (hasNull) tests.push(typed("null"));
    return sql`coalesce(${anyOf(tests)}, false)`;
  };
  return {
    // A JSON null member extracts as JSON null, not SQL NULL.
    exists: () => sql`${member} is not null`,
    equals: (value) => oneOf([value]),
    oneOf,
    text: (comparison, value) => sql`${asText} ${op(comparison)} cast(${value} as binary)`,
    number: (comparison, value) => sql`${asNumber} ${op(comparison)} ${value}`,
  };
}

export function mysqlStoreDialect(executor: Executor, tables: MySqlStoreTables): StoreDialect {
  const items = tables.storeItems;
  const columns = { table: items, ...items };
  const written = upsertColumns(columns);
  const checkPacketSize = packetSizeCheck((statement) => executor.all(statement));
  const transactional = transactionUnit(executor, isConflict);
  return {
    name: "mysql",
    maxJsonDepth: MARIADB_JSON_DEPTH,
    executor,
    columns,
    limits: { pathBytes: MYSQL_STORE_PATH_BYTES, keyBytes: MYSQL_STORE_KEY_BYTES },
    text: (value) => Buffer.from(value, "utf8"),
    json: (text) => sql`${text}`,
    valueOut: sql`${items.value}`,
    valueText: sql`cast(cast(${items.value} as char) as binary)`,
    valueIsString: sql`json_type(${items.value}) = 'STRING'`,
    field: (key) => valueField(items.value, key),
    upsertColumns: written,
    // created_at first: MySQL's assignments see the ones before them, and it reads the old expiry.
    upsert: (rows) =>
      sql`${insertValues(items, written, rows)} on duplicate key update ${sql.identifier(columns.createdAt.name)} = ${keptCreatedAt(
        columns,
        (column) => sql`${sql.identifier(column.name)}`,
        (column) => sql`values(${sql.identifier(column.name)})`,
      )}, ${sql.join(
        replacedColumns(columns).map(
          (column) => sql`${sql.identifier(column.name)} = values(${sql.identifier(column.name)})`,
        ),
        sql`, `,
      )}`,
    // Each statement is a packet of its own: one larger than max_allowed_packet is refused clearly.
    unit: async (reads, writes) => {
      for (const write of writes) await checkPacketSize([executor.compile(write)]);
      return transactional(reads, writes);
    },
    runAlone: retriedRun(executor, isConflict),
    // InnoDB locks rows as its scan meets them. The store's statements that lock several
    // items name them by key and test nothing another index serves, so the scan is the
    // primary key's, in key order (bytes, as inLockOrder).
    inKeyOrder: (where) => where,
  };
}
