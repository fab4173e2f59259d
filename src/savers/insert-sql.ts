import { type SQL, sql } from "drizzle-orm";
import type { InsertSpec } from "./dialect.js";

/** INSERT ... ON CONFLICT (key) DO NOTHING | DO UPDATE, as PostgreSQL and SQLite write it. */
export function onConflictInsert({ table, columns, rows, conflictTarget, update }: InsertSpec): SQL {
  const names = sql.join(
    columns.map((column) => sql.identifier(column.name)),
    sql`, `,
  );
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
  const target = sql.join(
    conflictTarget.map((column) => sql.identifier(column.name)),
    sql`, `,
  );
  const action =
    update.length === 0
      ? sql`do nothing`
      : sql`do update set ${sql.join(
          update.map((column) => sql`${sql.identifier(column.name)} = excluded.${sql.identifier(column.name)}`),
          sql`, `,
        )}`;
  return sql`insert into ${table} (${names}) values ${values} on conflict (${target}) ${action}`;
}
