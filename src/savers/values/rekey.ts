/**
 * Re-sealing stored values: `rekey` re-seals every channel value and pending write that
 * is not under the active key (plaintext rows included) in batches, `copyResealing`
 * re-seals a copied thread's values for their new thread, and `encryptionStatus` counts
 * the stored values per key id; both also cover the store's items when given its table.
 */
import { type Column, getTableName, type SQL, sql, type Table } from "drizzle-orm";
import type { Dialect, Row } from "../../dialects/dialect.js";
import type { StoreDialect } from "../../dialects/store-dialect.js";
import { DecryptionError, MissingKeyError } from "../../errors.js";
import { type Place, parseSealedType, SEALED_TYPE_PREFIX, type Sealer } from "../../serde/sealing.js";
import type { Statement } from "../../sql/statements.js";
import { itemsEncryptionStatus, rekeyItems, type ValueCounts } from "../store/rekey-items.js";
import { holdingThread } from "../threads/thread-lock.js";
import { blobPlace, chainText, writePlace } from "./sealed-values.js";
import { as, asBytes } from "./values.js";

export interface RekeyOptions {
  /** Rows read and re-sealed per batch (one atomic unit); default 200. */
  batchSize?: number;
  /** Called after each batch with the counts so far. */
  onProgress?: (progress: RekeyProgress) => void;
  /**
   * Whether the store's items are re-sealed too (default true). False leaves them as
   * they are: for a store that runs without the `encryption` option, which could not
   * read items sealed by a rekey.
   */
  store?: boolean;
}

export interface RekeyProgress {
  /** Channel values (checkpoint_blobs rows) re-sealed so far. */
  values: number;
  /** Pending writes (checkpoint_writes rows) re-sealed so far. */
  writes: number;
  /** Store items (store_items rows: value and embeddings) re-sealed so far. */
  storeItems: number;
}

/** How many stored values each key id seals, and how many are in the clear. */
export interface EncryptionStatus {
  /** Key id -> channel values and pending writes sealed with it. */
  keys: Record<string, number>;
  plaintext: number;
  /**
   * The store's items (`DrizzleStore`), counted apart; absent when the saver does not
   * cover the store's table (its own `tables`, Spider, or no store table yet).
   */
  store?: ValueCounts;
}

/** A table of sealed values: its key columns (in order), the columns its place needs, and the place. */
interface SealedTable {
  table: Table;
  type: Column;
  blob: Column;
  keys: [string, Column][];
  extra: [string, Column][];
  place(row: Row): Place;
  where(row: Row): string;
}

function sealedTables(dialect: Dialect): { values: SealedTable; writes: SealedTable } {
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

/**
 * Re-seals under the active key every value that is sealed with another key or stored in
 * the clear. Each batch is one atomic unit, and each row is replaced only if it is still
 * what was read (a racing writer's newer row is never overwritten), so it is safe beside
 * running writers and resumable: rows already under the active key are not read again.
 * A row that cannot be opened (a missing key, a changed row) stops it with that error.
 */
export async function rekey(
  dialect: Dialect,
  sealer: Sealer,
  options: RekeyOptions = {},
  store?: StoreDialect,
): Promise<RekeyProgress> {
  const batchSize = options.batchSize ?? 200;
  const progress: RekeyProgress = { values: 0, writes: 0, storeItems: 0 };
  const tables = sealedTables(dialect);
  for (const kind of ["values", "writes"] as const) {
    const table = tables[kind];
    let cursor: Row | undefined;
    for (;;) {
      const rows = await dialect.query(batchQuery(table, sealer.activeKeyId, cursor, batchSize));
      if (rows.length === 0) break;
      // Rows in key order: each thread's rows together, re-sealed in a unit holding its row,
      // as every change to a thread is (a unit over several threads deadlocked with deletes).
      const byThread = new Map<string, Statement[]>();
      for (const row of rows) {
        const place = table.place(row);
        const [type, plain] = sealer.open(String(row.type), asBytes(row.data), place, table.where(row), true);
        const [sealedType, sealed] = sealer.seal(type, plain, place);
        const threadId = row.thread_id as string;
        const statements = byThread.get(threadId) ?? [];
        statements.push(resealStatement(table, row, sealedType, sealed));
        byThread.set(threadId, statements);
      }
      for (const [threadId, statements] of byThread) await holdingThread(dialect, threadId, statements);
      progress[kind] += rows.length;
      options.onProgress?.({ ...progress });
      if (rows.length < batchSize) break;
      cursor = rows[rows.length - 1];
    }
  }
  if (store) {
    await rekeyItems(store, sealer, batchSize, (done) => {
      progress.storeItems = done;
      options.onProgress?.({ ...progress });
    });
  }
  return progress;
}

/** What copyThread re-seals: the statements, and the bytes each copied row gets, by its key. */
export interface CopyResealing {
  statements: Statement[];
  resealed: Map<string, Uint8Array>;
}

/** A sealed row's key in one of the sealed tables, under `threadId`. */
const rowKey = (table: SealedTable, row: Row, threadId: string) =>
  JSON.stringify([getTableName(table.table), threadId, ...table.keys.slice(1).map(([name]) => keyPart(row[name]))]);

const keyPart = (value: unknown) => (value instanceof Uint8Array ? Buffer.from(value).toString("hex") : String(value));

/** The sealed rows of a thread: keys, place columns, type and bytes. */
function sealedRows(dialect: Dialect, table: SealedTable, threadId: string): Promise<Row[]> {
  const columns = [...table.keys, ...table.extra].map(([name, column]) => as(column, name));
  columns.push(as(table.type, "type"), as(table.blob, "data"));
  return dialect.query(
    sql`select ${sql.join(columns, sql`, `)} from ${table.table} where ${table.keys[0][1]} = ${threadId} and ${table.type} <> 'empty'`,
  );
}

/**
 * Statements that re-seal, for `target`, the values copyThread copies from `source` as
 * bytes (a value is bound to its thread), run in the copy's atomic unit after its
 * inserts. A row that changed since it was read here is not overwritten with older bytes:
 * {@link resealLeftovers} re-seals it after the copy.
 */
export async function copyResealing(
  dialect: Dialect,
  sealer: Sealer,
  source: string,
  target: string,
): Promise<CopyResealing> {
  const statements: Statement[] = [];
  const resealed = new Map<string, Uint8Array>();
  for (const table of Object.values(sealedTables(dialect))) {
    for (const row of await sealedRows(dialect, table, source)) {
      const [type, plain] = sealer.open(String(row.type), asBytes(row.data), table.place(row), table.where(row));
      const [sealedType, sealed] = sealer.seal(type, plain, table.place({ ...row, thread_id: target }));
      statements.push(resealStatement(table, { ...row, thread_id: target }, sealedType, sealed));
      resealed.set(rowKey(table, row, target), sealed);
    }
  }
  return { statements, resealed };
}

/**
 * After a copy: re-seals for `target` the copied rows its unit did not, those whose
 * source row changed or appeared between copyResealing's read and the copy (a writer, a
 * rekey). Such a row holds the source's bytes, bound to the source thread: unreadable
 * in the copy until re-sealed. A row that opens for the target (written to it since) is
 * left alone.
 */
export async function resealLeftovers(
  dialect: Dialect,
  sealer: Sealer,
  source: string,
  target: string,
  resealed: Map<string, Uint8Array>,
): Promise<void> {
  const statements: Statement[] = [];
  for (const table of Object.values(sealedTables(dialect))) {
    for (const row of await sealedRows(dialect, table, target)) {
      const bytes = asBytes(row.data);
      const planned = resealed.get(rowKey(table, row, target));
      if (planned && Buffer.compare(Buffer.from(planned), Buffer.from(bytes)) === 0) continue;
      const type = String(row.type);
      try {
        sealer.open(type, bytes, table.place(row), table.where(row));
        continue;
      } catch (error) {
        if (!(error instanceof DecryptionError) || error instanceof MissingKeyError) throw error;
      }
      const [openedType, plain] = sealer.open(
        type,
        bytes,
        table.place({ ...row, thread_id: source }),
        table.where(row),
      );
      const [sealedType, sealed] = sealer.seal(openedType, plain, table.place(row));
      statements.push(resealStatement(table, row, sealedType, sealed));
    }
  }
  if (statements.length > 0) await holdingThread(dialect, target, statements);
}

/** Replaces a row's type and bytes, only if they are still what was read (`row.type`, `row.data`). */
function resealStatement(table: SealedTable, row: Row, sealedType: string, sealed: Uint8Array): SQL {
  const same = table.keys.map(([name, column]) => sql`${column} = ${row[name]}`);
  same.push(sql`${table.type} = ${row.type}`, sql`${table.blob} = ${row.data}`);
  return sql`update ${table.table} set ${sql.identifier(columnName(table.type))} = ${sealedType},
    ${sql.identifier(columnName(table.blob))} = ${sealed} where ${sql.join(same, sql` and `)}`;
}

function columnName(column: Column): string {
  return column.name;
}

/** The next batch of rows (in key order, after `cursor`) that are neither empty nor under the active key. */
function batchQuery(table: SealedTable, activeKeyId: string, cursor: Row | undefined, limit: number): SQL {
  const prefix = `${SEALED_TYPE_PREFIX}${activeKeyId}:`;
  const columns = [...table.keys, ...table.extra].map(([name, column]) => as(column, name));
  columns.push(as(table.type, "type"), as(table.blob, "data"));
  const conditions = [sql`${table.type} <> 'empty'`, sql`substr(${table.type}, 1, ${prefix.length}) <> ${prefix}`];
  if (cursor) {
    const keyColumns = sql.join(
      table.keys.map(([, column]) => sql`${column}`),
      sql`, `,
    );
    const keyValues = sql.join(
      table.keys.map(([name]) => sql`${cursor[name]}`),
      sql`, `,
    );
    conditions.push(sql`(${keyColumns}) > (${keyValues})`);
  }
  const order = sql.join(
    table.keys.map(([, column]) => sql`${column}`),
    sql`, `,
  );
  return sql`select ${sql.join(columns, sql`, `)} from ${table.table}
    where ${sql.join(conditions, sql` and `)} order by ${order} limit ${sql.raw(String(limit))}`;
}

/** Counts the stored values (channel values and pending writes, "empty" markers aside) per key id. */
export async function encryptionStatus(dialect: Dialect, store?: StoreDialect): Promise<EncryptionStatus> {
  const status: EncryptionStatus = { keys: {}, plaintext: 0 };
  for (const table of Object.values(sealedTables(dialect))) {
    const rows = await dialect.query(
      sql`select ${as(table.type, "type")}, count(*) as n from ${table.table} where ${table.type} <> 'empty' group by ${table.type}`,
    );
    for (const row of rows) {
      const sealed = parseSealedType(String(row.type));
      if (sealed) status.keys[sealed.keyId] = (status.keys[sealed.keyId] ?? 0) + Number(row.n);
      else status.plaintext += Number(row.n);
    }
  }
  if (store) status.store = await itemsEncryptionStatus(store);
  return status;
}
