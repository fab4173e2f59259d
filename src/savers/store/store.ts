/**
 * `DrizzleStore`, LangGraph's long-term memory (`BaseStore`) over the saver's databases:
 * items in one table keyed by namespace path and key (src/schema), each batch one unit
 * whose reads see the state before it (statements.ts, operations.ts).
 */
import {
  BaseStore,
  type Item,
  type Operation,
  type OperationResults,
  type SearchItem,
} from "@langchain/langgraph-checkpoint";
import type { StoreDialect } from "../../dialects/store-dialect.js";
import { InvalidInputError, type MigrationInfo } from "../../errors.js";
import { requireKnownOptions } from "../../known-options.js";
import { Sealer } from "../../serde/sealing.js";
import type { Runner } from "../../sql/executor.js";
import { connect } from "../../wiring/connect.js";
import { checkMigrationsLocation, resolveStore, type SupportedDatabase } from "../../wiring/registry.js";
import { vectorIndexOf } from "../../wiring/vector-indexes.js";
import { ClosedState } from "../closing.js";
import { findMigrationsFolder } from "../migrations/folder.js";
import { Migrations } from "../migrations/migrate.js";
import { batchSizeOf } from "../options.js";
import { type PeriodicTask, runPeriodically } from "../periodic.js";
import { inLockOrder } from "./lock-order.js";
import { NativeSearch } from "./native-index/native-search.js";
import { nativeIndexOf } from "./native-index/options.js";
import { lastPuts, planBatch } from "./operations.js";
import {
  checkStoreOptions,
  checkTtlOptions,
  type DrizzleStoreOptions,
  type StoreFromUrlOptions,
  type StoreTtlOptions,
} from "./options.js";
import { type Refresh, StoreReader } from "./reads.js";
import {
  itemsEncryptionStatus,
  rekeyItems,
  STORE_REKEY_OPTION_KEYS,
  type StoreRekeyOptions,
  type ValueCounts,
} from "./rekey-items.js";
import { ItemSealing } from "./sealed-items.js";
import {
  expiredItemsStatement,
  type PutRow,
  refreshStatements,
  sweepStatements,
  textOf,
  writeStatements,
} from "./statements.js";
import {
  type Embedder,
  type EmbedFunction,
  embedderOf,
  embedPuts,
  embedQuery,
  type StoreIndexOptions,
} from "./vectors.js";

export type {
  DrizzleStoreOptions,
  EmbedFunction,
  StoreFromUrlOptions,
  StoreIndexOptions,
  StoreRekeyOptions,
  StoreTtlOptions,
  ValueCounts as StoreEncryptionStatus,
};

const MINUTE_MS = 60_000;
const DEFAULT_SWEEP_MINUTES = 60;
/** Expired items a sweep reads per round, then deletes (in statements that lock them in key order). */
const SWEEP_BATCH = 500;

/**
 * LangGraph's `BaseStore` on PostgreSQL, MySQL/MariaDB or SQLite through Drizzle, on
 * every driver `DrizzleSaver` supports. Pass it to `compile({ store })`.
 */
export class DrizzleStore extends BaseStore {
  private readonly store: StoreDialect;
  private readonly migrations: Migrations;
  private readonly ttl: StoreTtlOptions;
  private readonly clock: () => number;
  private readonly embedder: Embedder | undefined;
  private readonly sealing: ItemSealing;
  /** The native vector index (`index.native`), undefined for the exact search. */
  private readonly native: NativeSearch | undefined;
  private readonly reader: StoreReader;
  private readonly sweepIntervalMs: number;
  private sweeper: PeriodicTask | undefined;
  /** Set by close(): every later call is refused (../closing.ts). */
  private readonly state = new ClosedState("DrizzleStore");

  constructor(db: SupportedDatabase, options: DrizzleStoreOptions = {}) {
    checkStoreOptions(options, "DrizzleStore");
    super();
    const resolved = resolveStore(db, options.tables, options.schema);
    checkMigrationsLocation(resolved.migrations, options.migrationsTable, options.migrationsSchema);
    this.store = resolved.store;
    this.ttl = checkTtlOptions(options.ttl);
    this.clock = options.clock ?? Date.now;
    this.embedder = embedderOf(options.index);
    this.sealing = new ItemSealing(options.encryption === undefined ? undefined : new Sealer(options.encryption));
    const native = this.embedder && nativeIndexOf(options.index?.native, () => vectorIndexOf(resolved));
    this.native =
      native && this.embedder && new NativeSearch(this.store, native.index, this.embedder.dims, native.settings);
    this.reader = new StoreReader(this.store, this.sealing, this.embedder, this.native, this.ttl.refreshOnRead);
    const sweepMinutes = this.ttl.sweepIntervalMinutes ?? DEFAULT_SWEEP_MINUTES;
    this.sweepIntervalMs = sweepMinutes * MINUTE_MS;
    this.migrations = new Migrations(resolved.dialect, {
      folder: findMigrationsFolder(resolved.migrations),
      ownTables: options.tables !== undefined,
      table: options.migrationsTable,
      schema: options.migrationsSchema,
    });
  }

  /** Opens its own connection from a URL, as `DrizzleSaver.fromUrl` does; `close()` ends it. */
  static async fromUrl(url: string, options: StoreFromUrlOptions = {}): Promise<DrizzleStore> {
    // Before connecting: a SQLite file would be created for options that are refused.
    checkStoreOptions(options, "DrizzleStore.fromUrl");
    const { driver, ...storeOptions } = options;
    const connection = await connect(url, driver);
    let store: DrizzleStore;
    try {
      store = new DrizzleStore(connection.db, storeOptions);
    } catch (error) {
      await connection.close().catch(() => {});
      throw error;
    }
    store.closeConnection = connection.close;
    return store;
  }

  private closeConnection: () => Promise<void> = async () => {};

  /**
   * Applies the shipped migrations not applied yet (the saver's and the store's tables
   * come with the same ones); safe when several processes call it at once. Does nothing
   * when the application passed its own `tables`.
   */
  async setup(): Promise<MigrationInfo[]> {
    this.state.check("setup");
    const applied = await this.migrations.apply();
    // Not a migration: the native vector index is specific to the driver and extension.
    await this.native?.setup();
    return applied;
  }

  /**
   * Stops the sweeper (waiting for its pass), then closes the connection if `fromUrl`
   * opened it; a database passed in is left open. Batches under way finish (or fail with
   * the driver's error); any later call is a SaverClosedError. Idempotent.
   */
  async close(): Promise<void> {
    this.state.closed = true;
    await this.stop();
    const close = this.closeConnection;
    this.closeConnection = async () => {};
    await close();
  }

  /**
   * Runs the operations as one unit: every operation is checked first (bad input writes
   * nothing), reads see the state before the batch, and the writes (the last put to
   * each key) all take effect or none do.
   */
  async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    this.state.check("batch");
    const plans = planBatch(this.store, operations);
    const now = this.clock();
    const puts = lastPuts(plans);
    // The model runs before the unit: no transaction waits on it.
    const embeddings = this.embedder ? await embedPuts(this.embedder, puts) : [];
    const queries = new Map<string, number[]>();
    if (this.embedder) {
      for (const plan of plans) {
        if (plan.kind === "search" && plan.query !== undefined && !queries.has(plan.query)) {
          queries.set(plan.query, await embedQuery(this.embedder, plan.query));
        }
      }
    }
    const rows: PutRow[] = inLockOrder(
      puts.map((plan, i) => {
        const ttl = plan.ttl === undefined ? (this.ttl.defaultTtl ?? null) : plan.ttl;
        const [json, sealed] =
          plan.json === null ? [null, null] : this.sealing.seal(plan.path, plan.key, plan.json, embeddings[i] ?? null);
        return {
          plan: { ...plan, json },
          embeddings: sealed,
          expiresAt: ttl === null ? null : now + Math.round(ttl * MINUTE_MS),
          ttlMinutes: ttl,
        };
      }),
    );
    const writes = writeStatements(this.store, rows, now);
    if (this.native && rows.length > 0 && (await this.native.active())) writes.push(...this.native.writes(rows));
    let refresh: Refresh = [];
    const reads = async (runner: Runner) => {
      const results: unknown[] = [];
      // Anew on each attempt of the unit.
      refresh = [];
      for (const plan of plans) results.push(await this.reader.read(runner, plan, now, refresh, queries));
      return results;
    };
    let results: unknown[] | undefined;
    if (writes.length === 0) results = await reads(this.store.executor);
    else if (plans.every((plan) => plan.kind === "put")) await this.store.unit(undefined, writes);
    else results = await this.store.unit(reads, writes);
    // After the unit, each statement on its own: a unit that locked the items it read and
    // then those it writes could wait in a cycle with another. updated_at stays.
    for (const statement of refreshStatements(this.store, refresh, now)) await this.store.runAlone(statement);
    return (results ?? plans.map(() => undefined)) as OperationResults<Op>;
  }

  /**
   * Stores `value` under `key` (replacing the item, keeping its `createdAt`). `ttl`:
   * minutes until it expires, null for never; by default the store's `ttl.defaultTtl`.
   */
  override async put(
    namespace: string[],
    key: string,
    value: Record<string, unknown>,
    index?: false | string[],
    options: { ttl?: number | null } = {},
  ): Promise<void> {
    this.state.check("put");
    await this.batch([{ namespace, key, value, index, ...(options.ttl !== undefined && { ttl: options.ttl }) }]);
  }

  /** `refreshTtl` overrides the store's `ttl.refreshOnRead` for this read. */
  override async get(namespace: string[], key: string, options: { refreshTtl?: boolean } = {}): Promise<Item | null> {
    this.state.check("get");
    const [item] = await this.batch([{ namespace, key, ...options }]);
    return item;
  }

  /**
   * Items under `namespacePrefix` matching `filter`, most recently updated first (then
   * by namespace and key). `refreshTtl` overrides the store's `ttl.refreshOnRead`.
   */
  override async search(
    namespacePrefix: string[],
    options: {
      filter?: Record<string, unknown>;
      limit?: number;
      offset?: number;
      query?: string;
      refreshTtl?: boolean;
    } = {},
  ): Promise<SearchItem[]> {
    this.state.check("search");
    const { limit = 10, offset = 0, ...rest } = options;
    const [items] = await this.batch([{ namespacePrefix, limit, offset, ...rest }]);
    return items;
  }

  // BaseStore's, after the check: a call after close() is named in its error.
  override async delete(namespace: string[], key: string): Promise<void> {
    this.state.check("delete");
    return super.delete(namespace, key);
  }

  override async listNamespaces(options?: Parameters<BaseStore["listNamespaces"]>[0]): Promise<string[][]> {
    this.state.check("listNamespaces");
    return super.listNamespaces(options);
  }

  /**
   * Re-seals under the active key every item sealed with another key or stored in the
   * clear, in batches (default 200), resumable and safe beside running writers; returns
   * how many. The saver's `rekey` does the same for the store's table beside its own;
   * this is for a table of the application's (`tables`).
   */
  async rekey(options: StoreRekeyOptions = {}): Promise<number> {
    this.state.check("rekey");
    requireKnownOptions(options as unknown, "rekey", STORE_REKEY_OPTION_KEYS);
    const { sealer } = this.sealing;
    if (!sealer) throw new InvalidInputError("rekey: the store has no encryption option");
    const batchSize = batchSizeOf(options.batchSize, 200, "rekey");
    return rekeyItems(this.store, sealer, batchSize, options.onProgress ?? (() => {}));
  }

  /** How many items each key id seals and how many are in the clear. */
  async encryptionStatus(): Promise<ValueCounts> {
    this.state.check("encryptionStatus");
    return itemsEncryptionStatus(this.store);
  }

  /**
   * Removes the expired items; returns how many. In statements of a few hundred items,
   * each locking them in the order batches write in, so that it never deadlocks with a
   * writer or another sweeper.
   */
  async sweepExpiredItems(): Promise<number> {
    this.state.check("sweepExpiredItems");
    const now = this.clock();
    const native = this.native && (await this.native.active()) ? this.native : undefined;
    let removed = 0;
    for (;;) {
      const expired = await this.store.executor.all(expiredItemsStatement(this.store, now, SWEEP_BATCH));
      const items = expired.map((row) => ({ path: textOf(row.ns_path), key: textOf(row.item_key) }));
      const removes = sweepStatements(this.store, items, now);
      // The native index's pass also removes the vectors of items gone without it.
      if (native) removed += await native.sweep(removes);
      else for (const remove of removes) removed += await this.store.runAlone(remove);
      if (items.length < SWEEP_BATCH) return removed;
    }
  }

  /**
   * Starts sweeping expired items: a pass at once, then `ttl.sweepIntervalMinutes`
   * (default 60) after each pass ends. The timer never keeps the process alive; a failed pass is
   * reported with `console.error` and the next one runs as planned. Idempotent.
   */
  override start(): void {
    this.state.check("start");
    if (this.sweeper) return;
    this.sweeper = runPeriodically(async () => {
      try {
        await this.sweepExpiredItems();
      } catch (error) {
        console.error("DrizzleStore: sweeping expired items failed", error);
      }
    }, this.sweepIntervalMs);
  }

  /** Stops the sweeper, waiting for a pass under way. */
  override async stop(): Promise<void> {
    const sweeper = this.sweeper;
    this.sweeper = undefined;
    await sweeper?.stop();
  }
}
