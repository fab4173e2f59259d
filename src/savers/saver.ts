import { fileURLToPath } from "node:url";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  compareWritesSortKeys,
  type DeltaChannelHistory,
  maxChannelVersion,
  type PendingWrite,
  type SerializerProtocol,
  TASKS,
  WRITES_IDX_MAP,
  writesSortKey,
} from "@langchain/langgraph-checkpoint";
import { type SQL, sql } from "drizzle-orm";
import { MsgpackSerializer } from "../serde/msgpack.js";
import { connect } from "./connect.js";
import { type CheckpointTables, detectDialect, type SupportedDatabase } from "./detect.js";
import type { Dialect, MigrationOptions, Row, TableStats } from "./dialect.js";
import { type ExpireThreadsOptions, type PruneStrategy, ThreadLifecycle } from "./lifecycle.js";
import { parseMetadata, serializeMetadata, storedFilterEntries } from "./metadata.js";
import { journal, type MigrationInfo } from "./migrations.js";
import {
  as,
  asBytes,
  type CheckpointKey,
  configOf,
  configurableOf,
  InvalidInputError,
  keyOf,
  optionalNamespace,
  requireId,
  toBuffer,
} from "./values.js";
import { nextChannelVersion } from "./versions.js";

/** Page size when `list` streams a long history. */
const LIST_PAGE_SIZE = 100;

interface CheckpointRow extends CheckpointKey {
  parentCheckpointId: string | null;
  checkpointType: string;
  checkpoint: Uint8Array;
  metadata: unknown;
}

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
  /** PostgreSQL schema of that table; default "public". */
  migrationsSchema?: string;
}

export interface ThreadSummary {
  threadId: string;
  /** Checkpoints of the thread (those matching the filter, when one is given). */
  checkpoints: number;
  latestCheckpointId: string;
  latestCreatedAt: Date;
}

/** Our own migrations table, so we never share drizzle's default one with the application. */
const DEFAULT_MIGRATIONS_TABLE = "langgraph_checkpoint_migrations";

/**
 * A LangGraph checkpoint saver over a Drizzle database: PostgreSQL (postgres.js),
 * MySQL/MariaDB (mysql2) or SQLite (better-sqlite3). All LangGraph logic lives here;
 * what differs between the databases comes from a {@link Dialect}.
 */
export class DrizzleSaver extends BaseCheckpointSaver {
  protected readonly dialect: Dialect;
  private readonly migrationsFolder: string;
  private readonly options: DrizzleSaverOptions;
  private readonly lifecycle: ThreadLifecycle;

  constructor(db: SupportedDatabase, options: DrizzleSaverOptions = {}) {
    super(options.serde ?? new MsgpackSerializer());
    this.options = options;
    const { dialect, migrations } = detectDialect(db, options.tables);
    this.dialect = dialect;
    this.lifecycle = new ThreadLifecycle(dialect, this.serde);
    this.migrationsFolder = fileURLToPath(new URL(`../../migrations/${migrations}`, import.meta.url));
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
   * Does nothing when the application passed its own `tables`.
   */
  async setup(): Promise<void> {
    if (this.options.tables) return;
    await this.dialect.migrate(this.migrationOptions());
  }

  /** The shipped migrations, split into applied and pending, oldest first. */
  async migrationStatus(): Promise<{ applied: MigrationInfo[]; pending: MigrationInfo[] }> {
    const applied = new Set(await this.dialect.appliedMigrations(this.migrationOptions()));
    const all = journal(this.migrationsFolder);
    return {
      applied: all.filter((m) => applied.has(m.createdAt)),
      pending: all.filter((m) => !applied.has(m.createdAt)),
    };
  }

  /** Row counts and bytes on disk (data plus indexes) of the saver's tables. */
  async storageStats(): Promise<TableStats[]> {
    return this.dialect.tableStats();
  }

  /**
   * Threads that have checkpoints matching `filter` (all threads without one), in id
   * order, with the count and newest of those checkpoints. Streams in pages.
   */
  async *listThreads(
    options: { filter?: Record<string, unknown>; limit?: number } = {},
  ): AsyncGenerator<ThreadSummary> {
    const c = this.dialect.columns.checkpoints;
    const entries = storedFilterEntries(options.filter);
    const { limit } = options;
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 0)) {
      throw new InvalidInputError(`limit must be a non-negative integer, got ${limit}`);
    }
    let remaining = limit ?? Number.POSITIVE_INFINITY;
    let cursor = "";
    while (remaining > 0) {
      const size = Math.min(remaining, LIST_PAGE_SIZE);
      const conditions = [sql`${c.threadId} > ${cursor}`];
      if (entries.length > 0) conditions.push(this.dialect.metadataMatches(entries));
      const rows = await this.dialect.query(sql`
        select ${as(c.threadId, "thread_id")}, count(*) as ${sql.identifier("checkpoints")},
               max(${c.checkpointId}) as ${sql.identifier("latest_checkpoint_id")},
               max(${c.createdAt}) as ${sql.identifier("latest_created_at")}
        from ${c.table} where ${sql.join(conditions, sql` and `)}
        group by ${c.threadId} order by ${c.threadId} limit ${sql.raw(String(size))}`);
      for (const row of rows) {
        yield {
          threadId: row.thread_id as string,
          checkpoints: Number(row.checkpoints),
          latestCheckpointId: row.latest_checkpoint_id as string,
          latestCreatedAt: this.dialect.readTimestamp(row.latest_created_at),
        };
      }
      if (rows.length < size) return;
      remaining -= rows.length;
      cursor = rows[rows.length - 1].thread_id as string;
    }
  }

  private migrationOptions(): MigrationOptions {
    return {
      migrationsFolder: this.migrationsFolder,
      migrationsTable: this.options.migrationsTable ?? DEFAULT_MIGRATIONS_TABLE,
      migrationsSchema: this.options.migrationsSchema,
    };
  }

  /** Closes the connection if `fromUrl` opened it; a database passed in is left open. */
  async close(): Promise<void> {
    const close = this.closeConnection;
    this.closeConnection = async () => {};
    await close();
  }

  /**
   * Versions are strings ("<counter>.<random>", see versions.ts); the base class
   * types them as numbers only so the saver fits `compile({ checkpointer })`.
   */
  override getNextVersion(current: number | undefined): number {
    return nextChannelVersion(current as number | string | undefined) as unknown as number;
  }

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const configurable = (config?.configurable ?? {}) as Record<string, unknown>;
    // The LangGraph contract: reading without a thread finds nothing (it is not an error).
    if (configurable.thread_id === undefined) return undefined;
    const threadId = requireId(configurable.thread_id, "thread_id");
    const ns = optionalNamespace(configurable.checkpoint_ns) ?? "";
    const checkpointId = configurable.checkpoint_id;
    const c = this.dialect.columns.checkpoints;
    const conditions = [sql`${c.threadId} = ${threadId}`, sql`${c.nsKey} = ${this.dialect.nsKey(ns)}`];
    if (checkpointId !== undefined)
      conditions.push(sql`${c.checkpointId} = ${requireId(checkpointId, "checkpoint_id")}`);
    const rows = await this.selectCheckpoints(sql.join(conditions, sql` and `), 1);
    const [tuple] = await this.loadTuples(rows);
    return tuple;
  }

  async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const configurable = (config?.configurable ?? {}) as Record<string, unknown>;
    const c = this.dialect.columns.checkpoints;
    const conditions: SQL[] = [];
    if (configurable.thread_id !== undefined) {
      conditions.push(sql`${c.threadId} = ${requireId(configurable.thread_id, "thread_id")}`);
    }
    const ns = optionalNamespace(configurable.checkpoint_ns);
    if (ns !== undefined) conditions.push(sql`${c.nsKey} = ${this.dialect.nsKey(ns)}`);
    if (configurable.checkpoint_id !== undefined) {
      conditions.push(sql`${c.checkpointId} = ${requireId(configurable.checkpoint_id, "checkpoint_id")}`);
    }
    const before = options.before?.configurable?.checkpoint_id;
    if (before !== undefined) conditions.push(sql`${c.checkpointId} < ${requireId(before, "before.checkpoint_id")}`);
    const entries = storedFilterEntries(options.filter);
    if (entries.length > 0) conditions.push(this.dialect.metadataMatches(entries));

    const { limit } = options;
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 0)) {
      throw new InvalidInputError(`limit must be a non-negative integer, got ${limit}`);
    }
    let remaining = limit ?? Number.POSITIVE_INFINITY;
    let cursor: CheckpointKey | undefined;
    while (remaining > 0) {
      const page = [...conditions];
      // Keyset pagination in the same order as the query: checkpoint_id, thread, namespace, all descending.
      if (cursor) {
        page.push(
          sql`(${c.checkpointId} < ${cursor.checkpointId} or (${c.checkpointId} = ${cursor.checkpointId} and (${c.threadId} < ${cursor.threadId} or (${c.threadId} = ${cursor.threadId} and ${c.checkpointNs} < ${cursor.ns}))))`,
        );
      }
      const size = Math.min(remaining, LIST_PAGE_SIZE);
      const rows = await this.selectCheckpoints(page.length > 0 ? sql.join(page, sql` and `) : sql`1 = 1`, size);
      for (const tuple of await this.loadTuples(rows)) yield tuple;
      if (rows.length < size) return;
      remaining -= rows.length;
      cursor = rows[rows.length - 1];
    }
  }

  async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    const configurable = configurableOf(config, "put");
    const threadId = requireId(configurable.thread_id, "thread_id");
    const ns = optionalNamespace(configurable.checkpoint_ns) ?? "";
    const parentId =
      configurable.checkpoint_id === undefined ? null : requireId(configurable.checkpoint_id, "checkpoint_id");
    if (checkpoint === null || typeof checkpoint !== "object")
      throw new InvalidInputError("put: checkpoint must be an object");
    const checkpointId = requireId(checkpoint.id, "checkpoint.id");

    // Serialise everything before touching the database, so bad input writes nothing.
    const { channel_values: values = {}, ...withoutValues } = checkpoint;
    const [checkpointType, checkpointBytes] = await this.serde.dumpsTyped(withoutValues);
    const metadataJson = serializeMetadata(metadata);
    const versionsJson = JSON.stringify(checkpoint.channel_versions ?? {});
    const blobRows: unknown[][] = [];
    for (const [channel, version] of Object.entries(newVersions ?? {})) {
      const hasValue = Object.hasOwn(values, channel);
      const [type, bytes] = hasValue
        ? await this.serde.dumpsTyped((values as Record<string, unknown>)[channel])
        : ["empty", null];
      blobRows.push([threadId, ns, channel, String(version), type, bytes && toBuffer(bytes)]);
    }

    const { checkpoints: c, blobs: b } = this.dialect.columns;
    const statements: SQL[] = [];
    if (blobRows.length > 0) {
      // Versions are unique per branch, so an existing row already holds this value.
      statements.push(
        this.dialect.insert({
          table: b.table,
          columns: [b.threadId, b.checkpointNs, b.channel, b.version, b.type, b.blob],
          rows: blobRows,
          conflictTarget: [b.threadId, b.checkpointNs, b.channel, b.version],
          update: [],
        }),
      );
    }
    statements.push(
      this.dialect.insert({
        table: c.table,
        columns: [
          c.threadId,
          c.checkpointNs,
          c.checkpointId,
          c.parentCheckpointId,
          c.checkpointType,
          c.checkpoint,
          c.channelVersions,
          c.metadata,
        ],
        rows: [
          [
            threadId,
            ns,
            checkpointId,
            parentId,
            checkpointType,
            toBuffer(checkpointBytes),
            this.dialect.jsonParam(versionsJson),
            this.dialect.jsonParam(metadataJson),
          ],
        ],
        conflictTarget: [c.threadId, c.checkpointNs, c.checkpointId],
        update: [c.parentCheckpointId, c.checkpointType, c.checkpoint, c.channelVersions, c.metadata],
      }),
    );
    await this.dialect.atomically(statements);
    return configOf({ threadId, ns, checkpointId });
  }

  async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath = ""): Promise<void> {
    const configurable = configurableOf(config, "putWrites");
    const threadId = requireId(configurable.thread_id, "thread_id");
    const ns = optionalNamespace(configurable.checkpoint_ns) ?? "";
    const checkpointId = requireId(configurable.checkpoint_id, "putWrites: checkpoint_id");
    requireId(taskId, "task id");
    if (!Array.isArray(writes)) throw new InvalidInputError("putWrites: writes must be an array");
    if (typeof taskPath !== "string") throw new InvalidInputError("putWrites: task path must be a string");

    const special: unknown[][] = [];
    const regular: unknown[][] = [];
    for (const [i, write] of writes.entries()) {
      if (!Array.isArray(write) || typeof write[0] !== "string") {
        throw new InvalidInputError(`putWrites: write ${i} must be a [channel, value] pair`);
      }
      const [channel, value] = write;
      const [type, bytes] = await this.serde.dumpsTyped(value);
      const idx = WRITES_IDX_MAP[channel] ?? i;
      const row = [threadId, ns, checkpointId, taskId, idx, channel, type, toBuffer(bytes), taskPath];
      (channel in WRITES_IDX_MAP ? special : regular).push(row);
    }
    if (special.length + regular.length === 0) return;

    const w = this.dialect.columns.writes;
    const spec = {
      table: w.table,
      columns: [w.threadId, w.checkpointNs, w.checkpointId, w.taskId, w.idx, w.channel, w.type, w.blob, w.taskPath],
      conflictTarget: [w.threadId, w.checkpointNs, w.checkpointId, w.taskId, w.idx],
    };
    const statements: SQL[] = [];
    // Special channels (errors, interrupts, resumes) replace what the task wrote before;
    // a regular write is recorded once, so a retried task cannot change a stored result.
    if (special.length > 0)
      statements.push(this.dialect.insert({ ...spec, rows: special, update: [w.channel, w.type, w.blob, w.taskPath] }));
    if (regular.length > 0) statements.push(this.dialect.insert({ ...spec, rows: regular, update: [] }));
    await this.dialect.atomically(statements);
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

  private async selectCheckpoints(where: SQL, limit: number): Promise<CheckpointRow[]> {
    const c = this.dialect.columns.checkpoints;
    const rows = await this.dialect.query(sql`
      select ${as(c.threadId, "thread_id")}, ${as(c.checkpointNs, "checkpoint_ns")}, ${as(c.checkpointId, "checkpoint_id")},
             ${as(c.parentCheckpointId, "parent_checkpoint_id")}, ${as(c.checkpointType, "checkpoint_type")},
             ${as(c.checkpoint, "checkpoint")}, ${as(c.metadata, "metadata")}
      from ${c.table}
      where ${where}
      order by ${c.checkpointId} desc, ${c.threadId} desc, ${c.checkpointNs} desc
      limit ${sql.raw(String(limit))}`);
    return rows.map((row) => ({
      threadId: row.thread_id as string,
      ns: row.checkpoint_ns as string,
      checkpointId: row.checkpoint_id as string,
      parentCheckpointId: (row.parent_checkpoint_id as string | null) ?? null,
      checkpointType: row.checkpoint_type as string,
      checkpoint: asBytes(row.checkpoint),
      metadata: row.metadata,
    }));
  }

  /** Turns checkpoint rows into tuples with two more queries (blobs, writes), run concurrently. */
  private async loadTuples(rows: CheckpointRow[]): Promise<CheckpointTuple[]> {
    if (rows.length === 0) return [];
    const checkpoints = await Promise.all(
      rows.map(async (row) => (await this.serde.loadsTyped(row.checkpointType, row.checkpoint)) as Checkpoint),
    );
    const [values, writes, sends] = await Promise.all([
      this.loadChannelValues(rows, checkpoints),
      this.loadWrites(rows),
      this.loadPendingSends(rows, checkpoints),
    ]);
    return rows.map((row, i) => {
      const checkpoint: Checkpoint = { ...checkpoints[i], channel_values: values[i] };
      const pendingSends = sends.get(i);
      if (pendingSends) this.applyPendingSends(checkpoint, pendingSends);
      return {
        config: configOf(row),
        checkpoint,
        metadata: parseMetadata(row.metadata) as CheckpointMetadata,
        parentConfig: row.parentCheckpointId
          ? configOf({ threadId: row.threadId, ns: row.ns, checkpointId: row.parentCheckpointId })
          : undefined,
        pendingWrites: writes.get(keyOf(row)) ?? [],
      };
    });
  }

  private async loadChannelValues(
    rows: CheckpointRow[],
    checkpoints: Checkpoint[],
  ): Promise<Record<string, unknown>[]> {
    const b = this.dialect.columns.blobs;
    const groups = new Map<string, { threadId: string; ns: string; pairs: Map<string, [string, string]> }>();
    rows.forEach((row, i) => {
      const group = groups.get(JSON.stringify([row.threadId, row.ns])) ?? {
        threadId: row.threadId,
        ns: row.ns,
        pairs: new Map(),
      };
      groups.set(JSON.stringify([row.threadId, row.ns]), group);
      for (const [channel, version] of Object.entries(checkpoints[i].channel_versions ?? {})) {
        group.pairs.set(JSON.stringify([channel, String(version)]), [channel, String(version)]);
      }
    });
    const conditions = [...groups.values()]
      .filter((group) => group.pairs.size > 0)
      .map(
        (group) =>
          sql`(${b.threadId} = ${group.threadId} and ${b.nsKey} = ${this.dialect.nsKey(group.ns)} and (${b.channel}, ${b.version}) in (${sql.join(
            [...group.pairs.values()].map(([channel, version]) => sql`(${channel}, ${version})`),
            sql`, `,
          )}))`,
      );
    const found = new Map<string, Row>();
    if (conditions.length > 0) {
      const blobRows = await this.dialect.query(sql`
        select ${as(b.threadId, "thread_id")}, ${as(b.checkpointNs, "checkpoint_ns")}, ${as(b.channel, "channel")},
               ${as(b.version, "version")}, ${as(b.type, "type")}, ${as(b.blob, "blob")}
        from ${b.table} where ${sql.join(conditions, sql` or `)}`);
      for (const blob of blobRows) {
        found.set(JSON.stringify([blob.thread_id, blob.checkpoint_ns, blob.channel, blob.version]), blob);
      }
    }
    return Promise.all(
      rows.map(async (row, i) => {
        const values: Record<string, unknown> = {};
        for (const [channel, version] of Object.entries(checkpoints[i].channel_versions ?? {})) {
          const blob = found.get(JSON.stringify([row.threadId, row.ns, channel, String(version)]));
          if (!blob || blob.type === "empty") continue;
          values[channel] = await this.serde.loadsTyped(blob.type as string, asBytes(blob.blob));
        }
        return values;
      }),
    );
  }

  /** Pending writes of each checkpoint, in LangGraph's (task path, task id, idx) order. */
  private async loadWrites(rows: CheckpointRow[], channel?: string): Promise<Map<string, CheckpointPendingWrite[]>> {
    const w = this.dialect.columns.writes;
    const byThread = new Map<string, { threadId: string; ns: string; ids: Set<string> }>();
    for (const row of rows) {
      const id = channel === undefined ? row.checkpointId : row.parentCheckpointId;
      if (id === null) continue;
      const key = JSON.stringify([row.threadId, row.ns]);
      const group = byThread.get(key) ?? { threadId: row.threadId, ns: row.ns, ids: new Set<string>() };
      byThread.set(key, group);
      group.ids.add(id);
    }
    const result = new Map<string, CheckpointPendingWrite[]>();
    if (byThread.size === 0) return result;
    const conditions = [...byThread.values()].map(
      (group) =>
        sql`(${w.threadId} = ${group.threadId} and ${w.nsKey} = ${this.dialect.nsKey(group.ns)} and ${w.checkpointId} in (${sql.join(
          [...group.ids].map((id) => sql`${id}`),
          sql`, `,
        )}))`,
    );
    const where = sql.join(conditions, sql` or `);
    const writeRows = await this.dialect.query(sql`
      select ${as(w.threadId, "thread_id")}, ${as(w.checkpointNs, "checkpoint_ns")}, ${as(w.checkpointId, "checkpoint_id")},
             ${as(w.taskId, "task_id")}, ${as(w.idx, "idx")}, ${as(w.channel, "channel")}, ${as(w.type, "type")},
             ${as(w.blob, "blob")}, ${as(w.taskPath, "task_path")}
      from ${w.table} where (${where})${channel === undefined ? sql`` : sql` and ${w.channel} = ${channel}`}`);
    const sorted = writeRows
      .map((row) => ({ row, sortKey: writesSortKey(row.task_path as string, row.task_id as string, Number(row.idx)) }))
      .sort((a, b) => compareWritesSortKeys(a.sortKey, b.sortKey));
    for (const { row } of sorted) {
      const key = keyOf({
        threadId: row.thread_id as string,
        ns: row.checkpoint_ns as string,
        checkpointId: row.checkpoint_id as string,
      });
      const value = await this.serde.loadsTyped(row.type as string, asBytes(row.blob));
      const list = result.get(key) ?? [];
      result.set(key, list);
      list.push([row.task_id as string, row.channel as string, value]);
    }
    return result;
  }

  /**
   * Checkpoints older than format v4 kept pending sends as writes to the TASKS channel
   * of their parent; LangGraph now expects them among the channel values.
   */
  private async loadPendingSends(rows: CheckpointRow[], checkpoints: Checkpoint[]): Promise<Map<number, unknown[]>> {
    const legacy = rows.filter((row, i) => checkpoints[i].v < 4 && row.parentCheckpointId !== null);
    const result = new Map<number, unknown[]>();
    if (legacy.length === 0) return result;
    const writes = await this.loadWrites(legacy, TASKS);
    rows.forEach((row, i) => {
      if (checkpoints[i].v >= 4 || row.parentCheckpointId === null) return;
      const parentWrites = writes.get(keyOf({ ...row, checkpointId: row.parentCheckpointId }));
      if (parentWrites?.length)
        result.set(
          i,
          parentWrites.map(([, , value]) => value),
        );
    });
    return result;
  }

  private applyPendingSends(checkpoint: Checkpoint, sends: unknown[]): void {
    checkpoint.channel_values[TASKS] = sends;
    const versions = Object.values(checkpoint.channel_versions);
    checkpoint.channel_versions[TASKS] =
      versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
  }
}
