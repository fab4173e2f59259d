/** SQL that several dialects write the same way. */
import { type Column, type SQL, sql, type Table } from "drizzle-orm";
import type { CheckpointColumns, InsertSpec } from "./dialect.js";

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

/**
 * `Dialect.threadActivity` as a skip scan written with a recursive CTE: one index
 * probe per thread for the next id and one for its newest `created_at`.
 */
export function threadActivityBySkipScan(c: CheckpointColumns, cursor: string, idleBefore: SQL, limit: number): SQL {
  return sql`
    with recursive threads (thread_id, n) as (
      select (select ${c.threadId} from ${c.table} where ${c.threadId} > ${cursor} order by ${c.threadId} limit 1), 1
      union all
      select (select ${c.threadId} from ${c.table} where ${c.threadId} > threads.thread_id
              order by ${c.threadId} limit 1), threads.n + 1
      from threads where threads.thread_id is not null and threads.n < ${limit}
    )
    select threads.thread_id as ${sql.identifier("thread_id")},
      case when (select max(${c.createdAt}) from ${c.table} where ${c.threadId} = threads.thread_id) < ${idleBefore}
        then 1 else 0 end as ${sql.identifier("idle")}
    from threads where threads.thread_id is not null
    order by threads.thread_id`;
}

/** Deadlock victims are rolled back whole, so running the unit again is safe. */
export async function retryOnDeadlock<T>(isDeadlock: (error: unknown) => boolean, run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (attempt >= 5 || !isDeadlock(error)) throw error;
    }
  }
}
