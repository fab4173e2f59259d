/**
 * Re-sealing stored values under the active key: `rekey` re-seals every channel value and
 * pending write that is not under it (plaintext rows included) in batches, and
 * `encryptionStatus` counts the stored values per key id; both also cover the store's
 * items when given its table.
 */
import { type SQL, sql } from "drizzle-orm";
import type { Dialect, Row } from "../../dialects/dialect.js";
import type { StoreDialect } from "../../dialects/store-dialect.js";
import { optionKeys } from "../../known-options.js";
import { parseSealedType, SEALED_TYPE_PREFIX, type Sealer } from "../../serde/sealing.js";
import type { Statement } from "../../sql/statements.js";
import { batchSizeOf } from "../options.js";
import { itemsEncryptionStatus, rekeyItems, type ValueCounts } from "../store/rekey-items.js";
import { holdingThread } from "../threads/thread-lock.js";
import { notStaging } from "./reserved.js";
import { resealStatement, type SealedTable, sealedRowColumns, sealedTables } from "./sealed-tables.js";
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

export const REKEY_OPTION_KEYS = optionKeys<RekeyOptions>({ batchSize: true, onProgress: true, store: true });

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
  const batchSize = batchSizeOf(options.batchSize, 200, "rekey");
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
        // The Sealer names a sealed row whose column holds no bytes; a plaintext one fails in asBytes.
        const [type, plain] = sealer.open(String(row.type), row.data as Uint8Array, place, table.where(row), true);
        const [sealedType, sealed] = sealer.seal(type, asBytes(plain), place);
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

/** The next batch of rows (in key order, after `cursor`) that are neither empty nor under the active key. */
function batchQuery(table: SealedTable, activeKeyId: string, cursor: Row | undefined, limit: number): SQL {
  const prefix = `${SEALED_TYPE_PREFIX}${activeKeyId}:`;
  const conditions = [
    sql`${table.type} <> 'empty'`,
    sql`substr(${table.type}, 1, ${prefix.length}) <> ${prefix}`,
    // An import's staged rows are sealed for the thread they will be, not for their staging id.
    notStaging(table.keys[0][1]),
  ];
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
  return sql`select ${sealedRowColumns(table)} from ${table.table}
    where ${sql.join(conditions, sql` and `)} order by ${order} limit ${sql.raw(String(limit))}`;
}

/**
 * Counts the stored values (channel values and pending writes, "empty" markers and the
 * rows an import has staged aside) per key id.
 */
export async function encryptionStatus(dialect: Dialect, store?: StoreDialect): Promise<EncryptionStatus> {
  const status: EncryptionStatus = { keys: {}, plaintext: 0 };
  for (const table of Object.values(sealedTables(dialect))) {
    const rows = await dialect.query(
      sql`select ${as(table.type, "type")}, count(*) as n from ${table.table}
        where ${table.type} <> 'empty' and ${notStaging(table.keys[0][1])} group by ${table.type}`,
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
