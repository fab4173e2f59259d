/** SQL that several dialects write the same way. */
import { type Column, type SQL, sql, type Table } from "drizzle-orm";
import type { InsertSpec } from "./dialect.js";

const names = (columns: Column[]) =>
  sql.join(
    columns.map((column) => sql.identifier(column.name)),
    sql`, `,
  );

/** `insert into t (a, b) values (?, ?), (?, ?)`: the part every dialect writes alike. */
export function insertValues(table: Table, columns: Column[], rows: unknown[][]): SQL {
  const values = sql.join(
    rows.map(
      (row) =>
        sql`(${sql.join(
          row.map((value) => sql`${value}`),
          sql`, `,
        )})`,
    ),
    sql`, `,
  );
  return sql`insert into ${table} (${names(columns)}) values ${values}`;
}

/** INSERT ... ON CONFLICT (key) DO NOTHING | DO UPDATE, as PostgreSQL and SQLite write it. */
export function onConflictInsert({ table, columns, rows, conflictTarget, update }: InsertSpec): SQL {
  const action =
    update.length === 0
      ? sql`do nothing`
      : sql`do update set ${sql.join(
          update.map((column) => sql`${sql.identifier(column.name)} = excluded.${sql.identifier(column.name)}`),
          sql`, `,
        )}`;
  return sql`${insertValues(table, columns, rows)} on conflict (${names(conflictTarget)}) ${action}`;
}
