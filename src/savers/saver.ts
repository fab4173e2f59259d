/**
 * `DrizzleSaver`, the LangGraph checkpoint saver: resolves the dialect and executor of a
 * drizzle database and hands each method to the feature modules beside it (read/, write/,
 * values/, threads/, migrations/).
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  type DeltaChannelHistory,
  type PendingWrite,
} from "@langchain/langgraph-checkpoint";
import type { Dialect, TableStats } from "../dialects/dialect.js";
import type { StoreDialect } from "../dialects/store-dialect.js";
import { InvalidInputError, type MigrationInfo } from "../errors.js";
import { requireKnownOptions } from "../known-options.js";
import { MsgpackSerializer } from "../serde/msgpack.js";
import { Sealer } from "../serde/sealing.js";
import { SpiderMigrations } from "../spider/migrations.js";
import { Templates } from "../sql/statements.js";
import { connect } from "../wiring/connect.js";
import { checkMigrationsLocation, resolve, resolveStore, type SupportedDatabase } from "../wiring/registry.js";
import { ClosedState } from "./closing.js";
import { findMigrationsFolder } from "./migrations/folder.js";
import { DEFAULT_MIGRATIONS_TABLE, type MigrationStatus, Migrations } from "./migrations/migrate.js";
import {
  checkSaverOptions,
  DEFAULT_INCREMENTAL_VALUES,
  type DrizzleSaverOptions,
  type FromUrlOptions,
} from "./options.js";
import { DeltaChannelWalk } from "./read/history.js";
import { CheckpointReader } from "./read/read.js";
import { hasItemsTable } from "./store/rekey-items.js";
import { type ExpireThreadsOptions, type PruneOptions, ThreadLifecycle } from "./threads/lifecycle.js";
import {
  type RetentionPolicy,
  type SweeperHandle,
  type SweeperOptions,
  type SweepOptions,
  type SweepResult,
  sweepPolicy,
} from "./threads/retention.js";
import { ThreadSweeper } from "./threads/sweep.js";
import { SweeperRegistry } from "./threads/sweeper.js";
import {
  type CountThreadsOptions,
  countThreads,
  type SearchThreadsOptions,
  searchThreads,
  type ThreadInfo,
} from "./threads/thread-search.js";
import { type ListThreadsOptions, listThreads, type ThreadSummary } from "./threads/threads.js";
import { DeltaCache } from "./values/deltas.js";
import {
  type EncryptionStatus,
  encryptionStatus,
  REKEY_OPTION_KEYS,
  type RekeyOptions,
  type RekeyProgress,
  rekey,
} from "./values/rekey.js";
import { requireThreadId } from "./values/reserved.js";
import { ValueSealing } from "./values/sealed-values.js";
import { configurableOf, optionalNamespace, requireId } from "./values/values.js";
import { nextChannelVersion } from "./write/versions.js";
import { CheckpointWriter } from "./write/write.js";

export type {
  CountThreadsOptions,
  DrizzleSaverOptions,
  EncryptionStatus,
  FromUrlOptions,
  MigrationStatus,
  RekeyOptions,
  RekeyProgress,
  SearchThreadsOptions,
  ThreadInfo,
  ThreadSummary,
};

/**
 * A LangGraph checkpoint saver over a Drizzle database: PostgreSQL, MySQL/MariaDB or
 * SQLite. All LangGraph logic lives in src/savers/ (read/, write/, values/, threads/);
 * the SQL that differs between the databases comes from a {@link Dialect}, and how
 * it runs from the driver's executor (src/drivers/).
 */
export class DrizzleSaver extends BaseCheckpointSaver {
  protected readonly dialect: Dialect;
  private readonly migrations: Pick<Migrations, "apply" | "status">;
  private readonly lifecycle: ThreadLifecycle;
  private readonly deltaChannels: DeltaChannelWalk;
  private readonly reader: CheckpointReader;
  private readonly writer: CheckpointWriter;
  private readonly retention: RetentionPolicy | undefined;
  private readonly sweeper: ThreadSweeper;
  private readonly sweepers = new SweeperRegistry();
  private readonly sealing: ValueSealing;
  /**
   * The store's table beside ours (the shipped migrations make both), covered by rekey and
   * encryptionStatus; resolved when they first need it. None with own tables or Spider.
   */
  private readonly storeItems: (() => StoreDialect) | undefined;
  private resolvedStoreItems: StoreDialect | undefined;
  /** Set by close(): every later call is refused (closing.ts). */
  private readonly state = new ClosedState("DrizzleSaver");
  /** Run before each page of `list` reads: a listing still iterated after close() stops there. */
  private readonly listPage = () => this.state.check("list");

  constructor(db: SupportedDatabase, options: DrizzleSaverOptions = {}) {
    checkSaverOptions(options, "DrizzleSaver");
    super(options.serde ?? new MsgpackSerializer());
    const { dialect, migrations } = resolve(db, options.tables, options.schema, {
      backgroundCheckpoints: options.backgroundCheckpoints,
    });
    checkMigrationsLocation(migrations, options.migrationsTable, options.migrationsSchema);
    this.dialect = dialect;
    const templates = new Templates();
    const deltas = new DeltaCache(options.incrementalValues ?? DEFAULT_INCREMENTAL_VALUES);
    this.sealing = new ValueSealing(options.encryption === undefined ? undefined : new Sealer(options.encryption));
    this.storeItems =
      options.tables === undefined && options.spider === undefined
        ? () => resolveStore(db, undefined, options.schema).store
        : undefined;
    this.reader = new CheckpointReader(dialect, this.serde, templates, deltas, this.sealing);
    const excluded = [...(options.excludeMetadataKeys ?? [])];
    this.writer = new CheckpointWriter(dialect, this.serde, templates, deltas, this.sealing, excluded);
    this.lifecycle = new ThreadLifecycle(dialect, this.sealing.sealer);
    this.retention = options.retention === undefined ? undefined : { ...options.retention };
    this.sweeper = new ThreadSweeper(dialect);
    this.deltaChannels = new DeltaChannelWalk(dialect, this.serde, this.sealing);
    const folder = findMigrationsFolder(migrations);
    if (options.spider !== undefined && options.tables !== undefined) {
      throw new InvalidInputError(
        "the spider and tables options exclude each other: Spider tables are made by setup()",
      );
    }
    this.migrations = options.spider
      ? new SpiderMigrations(
          dialect,
          { migrationsFolder: folder, migrationsTable: options.migrationsTable ?? DEFAULT_MIGRATIONS_TABLE },
          options.spider,
        )
      : new Migrations(dialect, {
          folder,
          ownTables: options.tables !== undefined,
          table: options.migrationsTable,
          schema: options.migrationsSchema,
        });
  }

  /**
   * Opens its own connection from a URL: "postgres://" / "postgresql://" (postgres.js,
   * else pg), "mysql://" / "mariadb://" (mysql2), or SQLite as "file:path", ":memory:"
   * or a plain path (better-sqlite3; libSQL with `driver: "libsql"`). `close()` ends it.
   */
  static async fromUrl(url: string, options: FromUrlOptions = {}): Promise<DrizzleSaver> {
    // Before connecting: a SQLite file would be created for options that are refused.
    checkSaverOptions(options, "DrizzleSaver.fromUrl");
    const { driver, ...saverOptions } = options;
    const connection = await connect(url, driver);
    let saver: DrizzleSaver;
    try {
      saver = new DrizzleSaver(connection.db, saverOptions);
    } catch (error) {
      await connection.close().catch(() => {});
      throw error;
    }
    saver.closeConnection = connection.close;
    return saver;
  }

  private closeConnection: () => Promise<void> = async () => {};

  /**
   * Applies the shipped migrations that are not applied yet. Idempotent, and safe
   * when several processes call it at once (they wait for each other's lock).
   * Does nothing when the application passed its own `tables`. Returns the migrations
   * this call applied; a failure is a `MigrationError` naming the migration.
   */
  async setup(): Promise<MigrationInfo[]> {
    this.state.check("setup");
    return this.migrations.apply();
  }

  /**
   * The shipped migrations, split into applied and pending, oldest first. With the
   * application's own `tables`, `managedBy` is "application" and both lists are empty.
   */
  async migrationStatus(): Promise<MigrationStatus> {
    this.state.check("migrationStatus");
    return this.migrations.status();
  }

  /** Row counts and bytes on disk (data plus indexes) of the saver's tables. */
  async storageStats(): Promise<TableStats[]> {
    this.state.check("storageStats");
    return this.dialect.tableStats();
  }

  /**
   * Threads that have checkpoints matching `filter` (all threads without one), in id
   * order, with the count and newest of those checkpoints. Streams in pages.
   */
  listThreads(options: ListThreadsOptions = {}): AsyncGenerator<ThreadSummary> {
    return listThreads(this.dialect, options, () => this.state.check("listThreads"));
  }

  /**
   * Threads whose newest checkpoint in the root namespace has metadata matching
   * `filter` (exactly as `list` matches), a page of them sorted by `sortBy`
   * ("updatedAt" by default, newest first). Reads the per-thread table and its indexes.
   */
  searchThreads(options?: SearchThreadsOptions): Promise<ThreadInfo[]> {
    if (this.state.closed) return this.state.rejected("searchThreads");
    return searchThreads(this.dialect, options);
  }

  /** How many threads `searchThreads` with this filter finds, all pages together. */
  countThreads(options?: CountThreadsOptions): Promise<number> {
    if (this.state.closed) return this.state.rejected("countThreads");
    return countThreads(this.dialect, options);
  }

  /**
   * Stops this saver's sweepers (waiting for their passes), then closes the connection if
   * `fromUrl` opened it; a database passed in is left open. Calls under way finish (or
   * fail with the driver's error); any later call is a SaverClosedError. Idempotent.
   */
  async close(): Promise<void> {
    this.state.closed = true;
    await this.sweepers.stopAll();
    const close = this.closeConnection;
    this.closeConnection = async () => {};
    await close();
  }

  /**
   * Versions are strings ("<counter>.<random>"), or numbers on a thread other savers
   * numbered (see versions.ts); the base class types them as numbers only so the
   * saver fits `compile({ checkpointer })`.
   */
  override getNextVersion(current: number | undefined): number {
    return nextChannelVersion(current as number | string | undefined) as unknown as number;
  }

  getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    if (this.state.closed) return this.state.rejected("getTuple");
    return this.reader.getTuple(config);
  }

  list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    return this.reader.list(config, options, this.listPage);
  }

  put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    if (this.state.closed) return this.state.rejected("put");
    return this.writer.put(config, checkpoint, metadata, newVersions);
  }

  putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath = ""): Promise<void> {
    if (this.state.closed) return this.state.rejected("putWrites");
    return this.writer.putWrites(config, writes, taskId, taskPath);
  }

  async deleteThread(threadId: string): Promise<void> {
    this.state.check("deleteThread");
    await this.lifecycle.deleteThreads([threadId]);
  }

  /**
   * Walks the parent chain in one query (a recursive CTE) instead of one `getTuple`
   * per ancestor; same result as the base implementation.
   */
  override async getDeltaChannelHistory(options: {
    config: RunnableConfig;
    channels: string[];
  }): Promise<Record<string, DeltaChannelHistory>> {
    this.state.check("getDeltaChannelHistory");
    const configurable = configurableOf(options?.config, "getDeltaChannelHistory");
    const threadId = requireThreadId(configurable.thread_id);
    const ns = optionalNamespace(configurable.checkpoint_ns) ?? "";
    const checkpointId =
      configurable.checkpoint_id === undefined ? undefined : requireId(configurable.checkpoint_id, "checkpoint_id");
    if (!Array.isArray(options.channels))
      throw new InvalidInputError("getDeltaChannelHistory: channels must be an array");
    return this.deltaChannels.walk(threadId, ns, checkpointId, options.channels);
  }

  /**
   * Re-seals under the active key every channel value and pending write sealed with
   * another key or stored in the clear (docs/encryption.md), then the store's items
   * (`DrizzleStore`'s table beside the saver's), in batches, each one atomic unit; safe
   * beside running writers and resumable. Needs the `encryption` option.
   */
  async rekey(options: RekeyOptions = {}): Promise<RekeyProgress> {
    this.state.check("rekey");
    requireKnownOptions(options as unknown, "rekey", REKEY_OPTION_KEYS);
    const { sealer } = this.sealing;
    if (!sealer) throw new InvalidInputError("rekey: the saver has no encryption option");
    return rekey(this.dialect, sealer, options, options.store === false ? undefined : await this.storeTable());
  }

  /** How many stored values each key id seals and how many are in the clear; the store's items apart. */
  async encryptionStatus(): Promise<EncryptionStatus> {
    this.state.check("encryptionStatus");
    return encryptionStatus(this.dialect, await this.storeTable());
  }

  private async storeTable(): Promise<StoreDialect | undefined> {
    if (!this.storeItems) return undefined;
    this.resolvedStoreItems ??= this.storeItems();
    return (await hasItemsTable(this.resolvedStoreItems)) ? this.resolvedStoreItems : undefined;
  }

  /**
   * Copies every checkpoint of every namespace of a thread, with its blobs and pending
   * writes, to an empty thread. Afterwards the two evolve independently. A source with
   * no checkpoints, or a target with some, is an InvalidInputError; nothing is written.
   */
  async copyThread(sourceThreadId: string, targetThreadId: string): Promise<void> {
    this.state.check("copyThread");
    await this.lifecycle.copyThread(sourceThreadId, targetThreadId);
  }

  /**
   * "keep_latest" (default) keeps only the newest checkpoint (the newest `keepLast`,
   * default 1) of each namespace of each thread, with their pending writes and the blobs
   * they reference; "delete" removes the threads. Blobs no remaining checkpoint references are removed.
   */
  async prune(threadIds: string[], options: PruneOptions = {}): Promise<void> {
    this.state.check("prune");
    await this.lifecycle.prune(threadIds, options);
  }

  /** Removes the checkpoints whose metadata `run_id` is one of `runIds`, with their writes and orphaned blobs. */
  async deleteForRuns(runIds: string[]): Promise<void> {
    this.state.check("deleteForRuns");
    await this.lifecycle.deleteForRuns(runIds);
  }

  /**
   * Prunes (by default deletes) every unpinned thread whose newest checkpoint is older
   * than `idleSince`, in batches of short transactions, each claiming its thread as
   * `sweep` does (a thread written to meanwhile is left alone). Returns the number of threads handled.
   */
  async expireThreads(options: ExpireThreadsOptions): Promise<number> {
    this.state.check("expireThreads");
    return this.lifecycle.expireThreads(options);
  }

  /**
   * One retention pass: every thread idle for `idleFor` (its newest checkpoint in any
   * namespace, by the database's clock) and not pinned is deleted or pruned, each in a
   * unit that claims the thread and re-checks that under the lock. Options override the
   * saver's `retention` for this pass. Concurrent sweeps (other processes too) never
   * handle one thread at once; a put that lands first keeps its thread.
   */
  async sweep(options: SweepOptions = {}): Promise<SweepResult> {
    this.state.check("sweep");
    const policy = sweepPolicy(this.retention, options);
    return this.sweeper.sweep(policy, options);
  }

  /**
   * Sweeps at once and then `intervalMs` after each pass ends, until `stop()` (or
   * `close()`). The timer never keeps the process alive; a failed pass goes to `onError`
   * (default: `console.error`) and the next pass runs as planned.
   */
  startSweeper(options: SweeperOptions): SweeperHandle {
    this.state.check("startSweeper");
    sweepPolicy(this.retention, options, "startSweeper");
    return this.sweepers.start((pass) => this.sweep(pass), options);
  }

  /** Marks the thread so that no retention policy (sweep, expireThreads) touches it; InvalidInputError when it has no checkpoints. */
  async pinThread(threadId: string): Promise<void> {
    this.state.check("pinThread");
    await this.sweeper.setPinned(threadId, true);
  }

  /** Lets retention policies handle the thread again; InvalidInputError when it has no checkpoints. */
  async unpinThread(threadId: string): Promise<void> {
    this.state.check("unpinThread");
    await this.sweeper.setPinned(threadId, false);
  }
}
