/**
 * Re-sealing the store's items: `rekeyItems` re-seals under the active key every item
 * value sealed with another key or stored in the clear, in batches; `itemsEncryptionStatus`
 * counts the items per key id. The saver's `rekey` and `encryptionStatus` call them for the
 * store's table beside its own (and `DrizzleStore` offers them for a table of its own).
 */
import { type SQL, sql } from "drizzle-orm";
import type { StoreDialect } from "../../dialects/store-dialect.js";
import { optionKeys } from "../../known-options.js";
import type { Sealer } from "../../serde/sealing.js";
import type { Row } from "../../sql/executor.js";
import { isMissingTableError } from "../../sql/missing-table.js";
import { openItem, sealItem } from "./sealed-items.js";
import { SEALED_START, textOf, valueStartsWith } from "./statements.js";

/** The options of `DrizzleStore.rekey`. */
export interface StoreRekeyOptions {
  /** Items read and re-sealed per batch (one atomic unit); default 200. */
  batchSize?: number;
  /** Called after each batch with the number of items re-sealed so far. */
  onProgress?: (items: number) => void;
}

export const STORE_REKEY_OPTION_KEYS = optionKeys<StoreRekeyOptions>({ batchSize: true, onProgress: true });

/** How many values each key id seals, and how many are in the clear. */
export interface ValueCounts {
  keys: Record<string, number>;
  plaintext: number;
}

/** Enough of a sealed value's JSON text to hold its key id (see STORE_ITEM_TYPE). */
const HEAD_LENGTH = SEALED_START.length + 16 + 2;

/** The next batch of items (in key order, after `cursor`) whose value is not under the active key. */
function batchQuery(store: StoreDialect, activeKeyId: string, cursor: Row | undefined, limit: number): SQL {
  const c = store.columns;
  const conditions = [sql`not ${valueStartsWith(store, `${SEALED_START}${activeKeyId}:`)}`];
  if (cursor) {
    conditions.push(
      sql`(${c.nsPath}, ${c.key}) > (${store.text(textOf(cursor.ns_path))}, ${store.text(textOf(cursor.item_key))})`,
    );
  }
  return sql`select ${c.nsPath} as ${sql.identifier("ns_path")}, ${c.key} as ${sql.identifier("item_key")},
    ${store.valueText} as ${sql.identifier("value")}, ${c.embeddings} as ${sql.identifier("embeddings")}
    from ${c.table} where ${sql.join(conditions, sql` and `)}
    order by ${c.nsPath}, ${c.key} limit ${sql.raw(String(limit))}`;
}

/** Replaces an item's value (and clears its embeddings column), only if the value is still what was read. */
function resealStatement(store: StoreDialect, row: Row, sealer: Sealer): SQL {
  const c = store.columns;
  const [path, key] = [textOf(row.ns_path), textOf(row.item_key)];
  const opened = openItem(sealer, { path, key, value: row.value, embeddings: row.embeddings }, true);
  const sealed = sealItem(sealer, path, key, opened.json ?? textOf(row.value), opened.embeddings);
  return sql`update ${c.table} set ${sql.identifier(c.value.name)} = ${store.json(sealed)},
    ${sql.identifier(c.embeddings.name)} = null
    where ${c.nsPath} = ${store.text(path)} and ${c.key} = ${store.text(key)} and ${store.valueText} = ${row.value}`;
}

/**
 * Re-seals under the active key every item sealed with another key or stored in the
 * clear, expired ones too. Each batch is one atomic unit and an item is replaced only if
 * its value is still what was read (a racing put is never overwritten), so it is safe
 * beside running writers and resumable. An item that cannot be opened stops it with
 * that error. `onBatch` gets the number re-sealed so far.
 */
export async function rekeyItems(
  store: StoreDialect,
  sealer: Sealer,
  batchSize: number,
  onBatch: (done: number) => void,
): Promise<number> {
  let done = 0;
  let cursor: Row | undefined;
  for (;;) {
    const rows = await store.executor.all(batchQuery(store, sealer.activeKeyId, cursor, batchSize));
    if (rows.length === 0) break;
    await store.unit(
      undefined,
      rows.map((row) => resealStatement(store, row, sealer)),
    );
    done += rows.length;
    onBatch(done);
    if (rows.length < batchSize) break;
    cursor = rows[rows.length - 1];
  }
  return done;
}

/** Whether the store's table exists (a database migrated before the store came has none). */
export async function hasItemsTable(store: StoreDialect): Promise<boolean> {
  try {
    await store.executor.all(sql`select 1 from ${store.columns.table} where 1 = 0`);
    return true;
  } catch (error) {
    // Any other failure (a permission, a lost connection) is the caller's to see.
    if (isMissingTableError(error)) return false;
    throw error;
  }
}

/** Counts the items per key id of their sealed value, and those in the clear. */
export async function itemsEncryptionStatus(store: StoreDialect): Promise<ValueCounts> {
  const c = store.columns;
  const counts: ValueCounts = { keys: {}, plaintext: 0 };
  // A constant length, not a parameter: PostgreSQL matches the grouped expression as written.
  const head = sql`substr(${store.valueText}, 1, ${sql.raw(String(HEAD_LENGTH))})`;
  const sealed = await store.executor.all(
    sql`select ${head} as ${sql.identifier("head")}, count(*) as ${sql.identifier("n")} from ${c.table}
      where ${valueStartsWith(store, SEALED_START)} group by ${head}`,
  );
  for (const row of sealed) {
    const text = textOf(row.head);
    const keyId = text.slice(SEALED_START.length, text.indexOf(":"));
    counts.keys[keyId] = (counts.keys[keyId] ?? 0) + Number(row.n);
  }
  const [plain] = await store.executor.all(
    sql`select count(*) as ${sql.identifier("n")} from ${c.table} where not ${valueStartsWith(store, SEALED_START)}`,
  );
  counts.plaintext = Number(plain?.n ?? 0);
  return counts;
}
