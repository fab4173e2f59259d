/**
 * The SQL of the store's operations over a {@link StoreDialect}, and the items read back.
 * Every read leaves out expired items; search applies the namespace prefix and the filter
 * in the same WHERE clause as its LIMIT and OFFSET.
 */
import type { Item } from "@langchain/langgraph-checkpoint";
import { type SQL, sql } from "drizzle-orm";
import type { ItemKey, StoreDialect } from "../../dialects/store-dialect.js";
import { SerializationError } from "../../errors.js";
import { SEALED_TYPE_PREFIX } from "../../serde/sealing.js";
import { parameterLimit, type Row } from "../../sql/executor.js";
import { allOf, anyOf, inPieces, placeholderRows, rowValues, type Statement, Templates } from "../../sql/statements.js";
import { filterPredicates } from "./filters.js";
import { compareKeys } from "./lock-order.js";
import { decodePath, underPrefix } from "./namespaces.js";
import type { GetPlan, PutPlan, SearchPlan } from "./operations.js";

const and = (parts: (SQL | undefined)[]): SQL => allOf(parts.filter((part): part is SQL => part !== undefined));

/**
 * The templates of a store's frequent statements (get, put, delete), compiled once per
 * shape: drizzle building their SQL on every call cost a put or get about a sixth of its time.
 */
const templatesByStore = new WeakMap<StoreDialect, Templates>();

function templatesOf(store: StoreDialect): Templates {
  let templates = templatesByStore.get(store);
  if (!templates) {
    templates = new Templates();
    templatesByStore.set(store, templates);
  }
  return templates;
}

/**
 * Items not expired at `now` (epoch milliseconds, or its placeholder). Written so that no
 * index can serve it: as `expires_at is null or expires_at > now`, a planner without fresh
 * statistics intersected the prefix's few rows with every entry of the expiry index (the
 * sweeper's), a cost that grew with the table.
 */
function live(store: StoreDialect, now: unknown): SQL {
  const c = store.columns;
  return sql`coalesce(${c.expiresAt} > ${now}, true)`;
}

/** The columns an item is read from, under fixed names. */
export function itemColumns(store: StoreDialect, embeddings = false): SQL {
  const c = store.columns;
  return sql`${c.nsPath} as ${sql.identifier("ns_path")}, ${c.key} as ${sql.identifier("item_key")},
    ${store.valueOut} as ${sql.identifier("value")}, ${c.createdAt} as ${sql.identifier("created_at")},
    ${c.updatedAt} as ${sql.identifier("updated_at")}, ${c.ttlMinutes} as ${sql.identifier("ttl_minutes")}${
      embeddings ? sql`, ${c.embeddings} as ${sql.identifier("embeddings")}` : sql``
    }`;
}

export function getStatement(store: StoreDialect, plan: GetPlan, now: number): Statement {
  const c = store.columns;
  const build = () => sql`select ${itemColumns(store)} from ${c.table}
    where ${c.nsPath} = ${sql.placeholder("path")} and ${c.key} = ${sql.placeholder("key")} and ${live(store, sql.placeholder("now"))}`;
  return templatesOf(store).statement("get", build, { path: store.text(plan.path), key: store.text(plan.key), now });
}

/** The start of a sealed item value's JSON text: a quote, then the sealed type's prefix. */
export const SEALED_START = `"${SEALED_TYPE_PREFIX}`;

/** The value's JSON text starts with `text` (a constant length, as PostgreSQL groups by it). */
export function valueStartsWith(store: StoreDialect, text: string): SQL {
  return sql`substr(${store.valueText}, 1, ${sql.raw(String(text.length))}) = ${store.text(text)}`;
}

/**
 * The WHERE clause of a search: prefix, not expired, and the filter unless it runs in the
 * process. A sealed item passes the filter in SQL (which cannot read it), so a store
 * without keys refuses it when it opens the row instead of leaving it out unseen.
 */
export function searchWhere(store: StoreDialect, plan: SearchPlan, now: number, filtered = true): SQL {
  const filter = filtered ? filterPredicates(store, plan.filter) : [];
  const passes = filter.length === 0 ? [] : [sql`(${and(filter)} or ${store.valueIsString})`];
  return and([underPrefix(store, plan.prefix), live(store, now), ...passes]);
}

/** A page of a search without a query: most recently updated first, then by namespace and key. */
export function searchStatement(store: StoreDialect, plan: SearchPlan, now: number): SQL {
  const c = store.columns;
  return sql`select ${itemColumns(store)} from ${c.table} where ${searchWhere(store, plan, now)}
    order by ${c.updatedAt} desc, ${c.nsPath}, ${c.key} limit ${plan.limit} offset ${plan.offset}`;
}

/**
 * Every item the prefix and filter leave, with its embeddings, newest first: a query's
 * candidates. With `filtered` false the filter is left out: sealed values are filtered in the process.
 */
export function candidatesStatement(store: StoreDialect, plan: SearchPlan, now: number, filtered = true): SQL {
  const c = store.columns;
  return sql`select ${itemColumns(store, true)} from ${c.table} where ${searchWhere(store, plan, now, filtered)}
    order by ${c.updatedAt} desc, ${c.nsPath}, ${c.key}`;
}

/** The distinct namespace paths (not expired) under a literal prefix, in path order. */
export function namespacesStatement(store: StoreDialect, prefix: string[], now: number): SQL {
  const c = store.columns;
  return sql`select distinct ${c.nsPath} as ${sql.identifier("ns_path")} from ${c.table}
    where ${and([underPrefix(store, prefix), live(store, now)])} order by ${sql.identifier("ns_path")}`;
}

/** Most items one refresh or sweep statement names (a statement of a few hundred KB at most). */
const KEYS_PER_STATEMENT = 500;

/** Items in pieces of at most KEYS_PER_STATEMENT (and what the driver's parameters allow), in key order. */
function keyPieces(store: StoreDialect, items: ItemKey[]): ItemKey[][] {
  const perStatement = Math.min(
    KEYS_PER_STATEMENT,
    Math.max(1, Math.floor(parameterLimit(store.executor.limits) / 2) - 2),
  );
  return inPieces([...items].sort(compareKeys), perStatement);
}

/** The items named by key, and `conditions`; several items locked in key order. */
function itemsWhere(store: StoreDialect, items: ItemKey[], conditions: SQL[]): SQL {
  const c = store.columns;
  const keys = items.map(({ path, key }) => sql`(${c.nsPath} = ${store.text(path)} and ${c.key} = ${store.text(key)})`);
  const where = and([...conditions, anyOf(keys)]);
  return items.length > 1 ? store.inKeyOrder(where) : where;
}

/**
 * Renews the expiry of the items read (those with a ttl) from `now`, leaving `updated_at`
 * as it is. Each statement stands alone and locks its items in key order.
 */
export function refreshStatements(store: StoreDialect, items: ItemKey[], now: number): SQL[] {
  const c = store.columns;
  return keyPieces(store, items).map(
    (piece) =>
      sql`update ${c.table} set ${sql.identifier(c.expiresAt.name)} = round(${now} + ${c.ttlMinutes} * 60000)
        where ${itemsWhere(store, piece, [sql`${c.ttlMinutes} is not null`, live(store, now)])}`,
  );
}

/**
 * Up to `limit` items expired at `now`, the earliest first: what a sweep removes next (a
 * read that locks nothing; the expiry index's order, so each piece costs its own size).
 */
export function expiredItemsStatement(store: StoreDialect, now: number, limit: number): SQL {
  const c = store.columns;
  return sql`select ${c.nsPath} as ${sql.identifier("ns_path")}, ${c.key} as ${sql.identifier("item_key")}
    from ${c.table} where ${c.expiresAt} <= ${now} order by ${c.expiresAt} limit ${limit}`;
}

/**
 * Deletes of those of `items` still expired at `now` (a read may have renewed one since),
 * each locking its items in key order. The expiry is tested so that no index serves it: the primary
 * key's scan keeps the order on MySQL.
 */
export function sweepStatements(store: StoreDialect, items: ItemKey[], now: number): SQL[] {
  const c = store.columns;
  return keyPieces(store, items).map(
    (piece) => sql`delete from ${c.table} where ${itemsWhere(store, piece, [sql`not ${live(store, now)}`])}`,
  );
}

/** What a put writes besides its value: when it expires and the ttl a refresh renews. */
export interface PutRow {
  plan: PutPlan;
  embeddings: Buffer | null;
  expiresAt: number | null;
  ttlMinutes: number | null;
}

/** Most bytes of values in one upsert (unless one item is larger): below every default max_allowed_packet of MySQL. */
const UPSERT_BYTES = 1024 * 1024;

/** Upsert rows in pieces of at most `rows` rows and about UPSERT_BYTES (`sizes`: each row's value and embeddings). */
function upsertPieces(upserts: unknown[][], sizes: number[], rows: number): unknown[][][] {
  const pieces: unknown[][][] = [];
  let piece: unknown[][] = [];
  let bytes = 0;
  for (const [i, row] of upserts.entries()) {
    const size = sizes[i];
    if (piece.length > 0 && (piece.length === rows || bytes + size > UPSERT_BYTES)) {
      pieces.push(piece);
      piece = [];
      bytes = 0;
    }
    piece.push(row);
    bytes += size;
  }
  if (piece.length > 0) pieces.push(piece);
  return pieces;
}

/**
 * The statements of a batch's writes (rows in {@link inLockOrder}): a delete for each
 * removed item, and the puts between two deletes as upserts in pieces the driver accepts.
 */
export function writeStatements(store: StoreDialect, rows: PutRow[], now: number): Statement[] {
  const c = store.columns;
  const templates = templatesOf(store);
  const width = store.upsertColumns.length;
  const valueAt = store.upsertColumns.indexOf(c.value);
  const rowsPerUpsert = Math.max(1, Math.floor(parameterLimit(store.executor.limits) / width));
  const statements: Statement[] = [];
  let upserts: unknown[][] = [];
  let sizes: number[] = [];
  const flushUpserts = () => {
    for (const piece of upsertPieces(upserts, sizes, rowsPerUpsert)) {
      const build = () =>
        store.upsert(
          // The value column's placeholder goes through the dialect's JSON parameter.
          placeholderRows("item", piece.length, width).map((row) =>
            row.map((placeholder, i) => (i === valueAt ? store.json(placeholder) : placeholder)),
          ),
        );
      statements.push(templates.statement(`upsert.${piece.length}`, build, rowValues("item", piece)));
    }
    upserts = [];
    sizes = [];
  };
  for (const { plan, embeddings, expiresAt, ttlMinutes } of rows) {
    const path = store.text(plan.path);
    const key = store.text(plan.key);
    if (plan.json === null) {
      flushUpserts();
      const build = () =>
        sql`delete from ${c.table} where ${c.nsPath} = ${sql.placeholder("path")} and ${c.key} = ${sql.placeholder("key")}`;
      statements.push(templates.statement("delete", build, { path, key }));
    } else {
      upserts.push([path, key, plan.json, embeddings, now, now, expiresAt, ttlMinutes]);
      sizes.push(plan.json.length + (embeddings?.length ?? 0));
    }
  }
  flushUpserts();
  return statements;
}

/** Text a driver may return as bytes (MySQL's VARBINARY). */
export function textOf(value: unknown): string {
  if (typeof value === "string") return value;
  if (value instanceof Uint8Array)
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("utf8");
  return String(value);
}

function parseValue(value: unknown, where: string): Record<string, unknown> {
  try {
    // Always a fresh object: items handed out never share state with the store or each other.
    const parsed =
      typeof value === "string" || value instanceof Uint8Array ? JSON.parse(textOf(value)) : structuredClone(value);
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) return parsed;
  } catch (error) {
    throw new SerializationError(`the stored value of ${where} is not JSON`, { cause: error });
  }
  throw new SerializationError(`the stored value of ${where} is not a JSON object`);
}

export function itemOf(row: Row): Item {
  const path = textOf(row.ns_path);
  const key = textOf(row.item_key);
  return {
    namespace: decodePath(path),
    key,
    value: parseValue(row.value, `${path} / ${key}`),
    createdAt: new Date(Number(row.created_at)),
    updatedAt: new Date(Number(row.updated_at)),
  };
}
