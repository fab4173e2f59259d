/**
 * The SQL that copies a thread's rows under another thread id, inside the database: a
 * copy (copyThread) and an import's move of its staged rows into place (a move is a copy
 * and a delete: Spider cannot update the column its tables are partitioned by); and the
 * check both make first, whether a thread has rows.
 */
import { type Column, getTableColumns, type SQL, sql, type Table } from "drizzle-orm";

/**
 * `insert ... select` of the rows of `table` whose `threadId` is `from`, under `to`, their
 * values as bytes (nothing decoded). Generated columns are left to the database, and the
 * `skip` columns to their defaults; `where` narrows the rows copied.
 */
export function copyRows(
  table: Table,
  threadId: Column,
  from: string,
  to: string,
  { skip = [], where }: { skip?: Column[]; where?: SQL } = {},
): SQL {
  const columns = Object.values(getTableColumns(table) as Record<string, Column>).filter(
    (column) => !column.generated && !skip.includes(column),
  );
  const names = sql.join(
    columns.map((column) => sql.identifier(column.name)),
    sql`, `,
  );
  const values = sql.join(
    columns.map((column) => (column === threadId ? sql`${to}` : sql`${column}`)),
    sql`, `,
  );
  return sql`insert into ${table} (${names}) select ${values} from ${table}
    where ${threadId} = ${from}${where ? sql` and ${where}` : sql``}`;
}

type ThreadTables = { table: Table; threadId: Column }[];

/** Whether the thread has a row in one of `tables`, asked in one statement. */
export async function threadHasRows(
  query: (statement: SQL) => Promise<Record<string, unknown>[]>,
  tables: ThreadTables,
  threadId: string,
): Promise<boolean> {
  const found = sql.identifier("found");
  const [row] = await query(sql`select case when ${hasRows(tables, threadId)} then 1 else 0 end as ${found}`);
  return Number(row?.found) === 1;
}

/** True when the thread has a row in one of `tables` (a condition, for a unit's precondition too). */
export function hasRows(tables: ThreadTables, threadId: string): SQL {
  return sql.join(
    tables.map(({ table, threadId: column }) => sql`exists (select 1 from ${table} where ${column} = ${threadId})`),
    sql` or `,
  );
}
