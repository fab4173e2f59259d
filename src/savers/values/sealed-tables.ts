/**
 * The tables of sealed values (channel values, pending writes): their keys, the columns a
 * value's place needs, how to read a thread's sealed rows and how to replace one row's
 * bytes. Shared by rekey (rekey.ts) and the re-sealing of copies (copy-resealing.ts).
 */
import { type Column, type SQL, sql, type Table } from "drizzle-orm";
import type { Dialect, Row, UnitRunner } from "../../dialects/dialect.js";
import type { Place } from "../../serde/sealing.js";
import { blobPlace, chainText, writePlace } from "./sealed-values.js";
import { as } from "./values.js";

/** A table of sealed values: its key columns (in order), the columns its place needs, and the place. */
export interface SealedTable {
  table: Table;
  type: Column;
  blob: Column;
  keys: [string, Column][];
  extra: [string, Column][];
  place(row: Row): Place;
  where(row: Row): string;
}

/** The dialect's two tables of sealed values: channel values (checkpoint_blobs) and pending writes. */
export function sealedTables(dialect: Dialect): { values: SealedTable; writes: SealedTable } {
  const { blobs: b, writes: w } = dialect.columns;
  return {
    values: {
      table: b.table,
      type: b.type,
      blob: b.blob,
      keys: [
        ["thread_id", b.threadId],
        ["ns_key", b.nsKey],
        ["channel", b.channel],
        ["version", b.version],
      ],
      extra: [
        ["checkpoint_ns", b.checkpointNs],
        ["delta_chain", b.deltaChain],
      ],
      place: (row) =>
        blobPlace(
          row.thread_id as string,
          row.checkpoint_ns as string,
          row.channel as string,
          String(row.version),
          chainText(row.delta_chain),
        ),
      where: (row) =>
        `the value of channel ${JSON.stringify(row.channel)} (version ${JSON.stringify(String(row.version))}) of thread ${JSON.stringify(row.thread_id)}, namespace ${JSON.stringify(row.checkpoint_ns)}`,
    },
    writes: {
      table: w.table,
      type: w.type,
      blob: w.blob,
      keys: [
        ["thread_id", w.threadId],
        ["ns_key", w.nsKey],
        ["checkpoint_id", w.checkpointId],
        ["task_id", w.taskId],
        ["idx", w.idx],
      ],
      extra: [
        ["checkpoint_ns", w.checkpointNs],
        ["channel", w.channel],
      ],
      place: (row) =>
        writePlace(
          row.thread_id as string,
          row.checkpoint_ns as string,
          row.checkpoint_id as string,
          row.task_id as string,
          Number(row.idx),
          row.channel as string,
        ),
      where: (row) =>
        `the pending write of task ${JSON.stringify(row.task_id)} of thread ${JSON.stringify(row.thread_id)}, checkpoint ${JSON.stringify(row.checkpoint_id)}`,
    },
  };
}

/** The select list of a sealed row: its keys and place columns by name, its `type` and its bytes as `data`. */
export function sealedRowColumns(table: SealedTable): SQL {
  const columns = [...table.keys, ...table.extra].map(([name, column]) => as(column, name));
  columns.push(as(table.type, "type"), as(table.blob, "data"));
  return sql.join(columns, sql`, `);
}

/** The sealed rows of a thread (keys, place columns, type and bytes), read through `query`. */
export function sealedRows(query: UnitRunner["query"], table: SealedTable, threadId: string): Promise<Row[]> {
  return query(
    sql`select ${sealedRowColumns(table)} from ${table.table} where ${table.keys[0][1]} = ${threadId} and ${table.type} <> 'empty'`,
  );
}

/** Replaces a row's type and bytes, only if they are still what was read (`row.type`, `row.data`). */
export function resealStatement(table: SealedTable, row: Row, sealedType: string, sealed: Uint8Array): SQL {
  const same = table.keys.map(([name, column]) => sql`${column} = ${row[name]}`);
  same.push(sql`${table.type} = ${row.type}`, sql`${table.blob} = ${row.data}`);
  return sql`update ${table.table} set ${sql.identifier(table.type.name)} = ${sealedType},
    ${sql.identifier(table.blob.name)} = ${sealed} where ${sql.join(same, sql` and `)}`;
}
