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
  type SerializerProtocol,
} from "@langchain/langgraph-checkpoint";
import type { Dialect, TableStats } from "../dialects/dialect.js";
import { connect } from "../drivers/connect.js";
import { type CheckpointTables, resolve, type SupportedDatabase } from "../drivers/registry.js";
import { InvalidInputError, type MigrationInfo } from "../errors.js";
import { findMigrationsFolder } from "../migrations-folder.js";
import { MsgpackSerializer } from "../serde/msgpack.js";
import { type ExpireThreadsOptions, type PruneStrategy, ThreadLifecycle } from "./lifecycle.js";
import { Migrations } from "./migrate.js";
import { CheckpointReader } from "./read.js";
import { Templates } from "./statements.js";
import { listThreads, type ThreadSummary } from "./threads.js";
import { configurableOf, optionalNamespace, requireId } from "./values.js";
import { nextChannelVersion } from "./versions.js";
import { CheckpointWriter } from "./write.js";

export type { ThreadSummary };

export interface DrizzleSaverOptions {
  /** Serializer for checkpoints, channel values and writes; MessagePack by default. */
  serde?: SerializerProtocol;
  /**
   * Tables the application defined itself with `checkpointTables()` from
   * "langgraph-checkpoint-drizzle/pg" (or /mysql, /sqlite) and migrates with its own
   * drizzle-kit. `setup()` then does nothing.
   */
  tables?: CheckpointTables;
  /** Table recording our applied migrations; default "langgraph_checkpoint_migrations". */
  migrationsTable?: string;
  /** PostgreSQL schema of that table; default the current schema (first of search_path), where our tables go. */
  migrationsSchema?: string;
}

/**
 * A LangGraph checkpoint saver over a Drizzle database: PostgreSQL, MySQL/MariaDB or
 * SQLite. All LangGraph logic lives in src/saver/ (read.ts, write.ts, lifecycle.ts);
 * the SQL that differs between the databases comes from a {@link Dialect}, and how
 * it runs from the driver's executor (src/drivers/).
 */
export class DrizzleSaver extends BaseCheckpointSaver {
  protected readonly dialect: Dialect;
  private readonly migrations: Migrations;
  private readonly lifecycle: ThreadLifecycle;
  private readonly reader: CheckpointReader;
  private readonly writer: CheckpointWriter;

  constructor(db: SupportedDatabase, options: DrizzleSaverOptions = {}) {
    super(options.serde ?? new MsgpackSerializer());
    const { dialect, migrations } = resolve(db, options.tables);
    this.dialect = dialect;
    const templates = new Templates();
    this.reader = new CheckpointReader(dialect, this.serde, templates);
    this.writer = new CheckpointWriter(dialect, this.serde, templates);
    this.lifecycle = new ThreadLifecycle(dialect, this.serde);
    this.migrations = new Migrations(dialect, {
      folder: findMigrationsFolder(migrations),
      ownTables: options.tables !== undefined,
      table: options.migrationsTable,
      schema: options.migrationsSchema,
    });
  }

  /**
   * Opens its own connection from a URL: "postgres://" / "postgresql://", "mysql://",
   * or SQLite as "file:path", ":memory:" or a plain path. `close()` ends it.
   */
  static async fromUrl(url: string, options: DrizzleSaverOptions = {}): Promise<DrizzleSaver> {
    const connection = await connect(url);
    const saver = new DrizzleSaver(connection.db, options);
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
    return this.migrations.apply();
  }

  /** The shipped migrations, split into applied and pending, oldest first. */
  async migrationStatus(): Promise<{ applied: MigrationInfo[]; pending: MigrationInfo[] }> {
    return this.migrations.status();
  }

  /** Row counts and bytes on disk (data plus indexes) of the saver's tables. */
  async storageStats(): Promise<TableStats[]> {
    return this.dialect.tableStats();
  }

  /**
   * Threads that have checkpoints matching `filter` (all threads without one), in id
   * order, with the count and newest of those checkpoints. Streams in pages.
   */
  listThreads(options: { filter?: Record<string, unknown>; limit?: number } = {}): AsyncGenerator<ThreadSummary> {
    return listThreads(this.dialect, options);
  }

  /** Closes the connection if `fromUrl` opened it; a database passed in is left open. */
  async close(): Promise<void> {
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
    return this.reader.getTuple(config);
  }

  list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    return this.reader.list(config, options);
  }

  put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    return this.writer.put(config, checkpoint, metadata, newVersions);
  }

  putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath = ""): Promise<void> {
    return this.writer.putWrites(config, writes, taskId, taskPath);
  }

  async deleteThread(threadId: string): Promise<void> {
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
    const configurable = configurableOf(options?.config, "getDeltaChannelHistory");
    const threadId = requireId(configurable.thread_id, "thread_id");
    const ns = optionalNamespace(configurable.checkpoint_ns) ?? "";
    const checkpointId =
      configurable.checkpoint_id === undefined ? undefined : requireId(configurable.checkpoint_id, "checkpoint_id");
    if (!Array.isArray(options.channels))
      throw new InvalidInputError("getDeltaChannelHistory: channels must be an array");
    return this.lifecycle.deltaChannelHistory(threadId, ns, checkpointId, options.channels);
  }

  /**
   * Copies every checkpoint of every namespace of a thread, with its blobs and pending
   * writes, to an empty thread. Afterwards the two evolve independently.
   */
  async copyThread(sourceThreadId: string, targetThreadId: string): Promise<void> {
    await this.lifecycle.copyThread(sourceThreadId, targetThreadId);
  }

  /**
   * "keep_latest" (default) keeps only the newest checkpoint of each namespace of each
   * thread, with its pending writes and the blobs it references; "delete" removes the
   * threads. Blobs no remaining checkpoint references are removed.
   */
  async prune(threadIds: string[], options: { strategy?: PruneStrategy } = {}): Promise<void> {
    await this.lifecycle.prune(threadIds, options.strategy ?? "keep_latest");
  }

  /** Removes the checkpoints whose metadata `run_id` is one of `runIds`, with their writes and orphaned blobs. */
  async deleteForRuns(runIds: string[]): Promise<void> {
    await this.lifecycle.deleteForRuns(runIds);
  }

  /**
   * Prunes (by default deletes) every thread whose newest checkpoint is older than
   * `idleSince`, in batches of short transactions. Returns the number of threads handled.
   */
  async expireThreads(options: ExpireThreadsOptions): Promise<number> {
    return this.lifecycle.expireThreads(options);
  }
}
