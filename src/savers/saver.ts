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
import { type Column, type SQL, sql } from "drizzle-orm";
import { InvalidInputError, MigrationError, type MigrationInfo, MissingParentError } from "../errors.js";
import { MsgpackSerializer } from "../serde/msgpack.js";
import { connect } from "./connect.js";
import { type CheckpointTables, detectDialect, type SupportedDatabase } from "./detect.js";
import type { Dialect, MigrationOptions, Row, TableStats } from "./dialect.js";
import { type ExpireThreadsOptions, type PruneStrategy, ThreadLifecycle } from "./lifecycle.js";
import { parseMetadata, serializeMetadata, storedFilterEntries } from "./metadata.js";
import { journal } from "./migrations.js";
import { type Bound, LruCache, placeholderRows, rowValues, type Statement, type Values } from "./statements.js";
import {
  as,
  asBytes,
  type CheckpointKey,
  configOf,
  configurableOf,
  isRecord,
  keyOf,
  optionalNamespace,
  parseJsonColumn,
  requireId,
  rowKey,
  toBuffer,
} from "./values.js";
import { nextChannelVersion } from "./versions.js";

/** Conditions on the checkpoints table for one page; `key` names their shape when they are reusable. */
interface PageCondition {
  /** Built only when the page's statement is not cached yet. */
  where: () => SQL;
  values: Values;
  key?: string;
}

/** Page size when `list` streams a long history. */
const LIST_PAGE_SIZE = 100;

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
  /** The statements of the frequent calls, by shape (see statements.ts). */
  private readonly templates = new LruCache<SQL>(500);

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
   * Does nothing when the application passed its own `tables`. Returns the migrations
   * this call applied; a failure is a `MigrationError` naming the migration.
   */
  async setup(): Promise<MigrationInfo[]> {
    if (this.options.tables) return [];
    const migrations = journal(this.migrationsFolder);
    const named = (createdAt: number) =>
      migrations.find((m) => m.createdAt === createdAt) ?? { tag: String(createdAt), createdAt };
    try {
      const applied = await this.dialect.migrate(this.migrationOptions());
      return applied.map(named);
    } catch (error) {
      if (error instanceof MigrationError) {
        throw new MigrationError(error.createdAt, error.cause, named(error.createdAt));
      }
      throw error;
    }
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
    const table = this.options.migrationsTable ?? DEFAULT_MIGRATIONS_TABLE;
    // drizzle's migrator applies only entries newer than its newest row: sharing its
    // table would make one history hide the other's migrations.
    if (table === "__drizzle_migrations") {
      throw new InvalidInputError('migrationsTable must not be drizzle\'s own "__drizzle_migrations"');
    }
    return {
      migrationsFolder: this.migrationsFolder,
      migrationsTable: table,
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
    const values: Values = { "page.thread": threadId, "page.ns": this.dialect.nsKey(ns) };
    if (checkpointId !== undefined) values["page.id"] = requireId(checkpointId, "checkpoint_id");
    const key = checkpointId === undefined ? "getTuple.latest" : "getTuple.id";
    const where = () => {
      const conditions = [
        sql`${c.threadId} = ${sql.placeholder("page.thread")}`,
        sql`${c.nsKey} = ${sql.placeholder("page.ns")}`,
      ];
      if (checkpointId !== undefined) conditions.push(sql`${c.checkpointId} = ${sql.placeholder("page.id")}`);
      return sql.join(conditions, sql` and `);
    };
    const { tuples } = await this.loadPage({ where, values, key }, 1);
    return tuples[0];
  }

  async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const configurable = (config?.configurable ?? {}) as Record<string, unknown>;
    const c = this.dialect.columns.checkpoints;
    // Values go to placeholders, so a list without a filter reuses its statement.
    const conditions: SQL[] = [];
    const values: Values = {};
    const condition = (name: string, value: unknown, build: (placeholder: SQL) => SQL) => {
      values[name] = value;
      conditions.push(build(sql`${sql.placeholder(name)}`));
    };
    if (configurable.thread_id !== undefined) {
      condition("page.thread", requireId(configurable.thread_id, "thread_id"), (p) => sql`${c.threadId} = ${p}`);
    }
    const ns = optionalNamespace(configurable.checkpoint_ns);
    if (ns !== undefined) condition("page.ns", this.dialect.nsKey(ns), (p) => sql`${c.nsKey} = ${p}`);
    if (configurable.checkpoint_id !== undefined) {
      const id = requireId(configurable.checkpoint_id, "checkpoint_id");
      condition("page.id", id, (p) => sql`${c.checkpointId} = ${p}`);
    }
    const before = options.before?.configurable?.checkpoint_id;
    if (before !== undefined) {
      condition("page.before", requireId(before, "before.checkpoint_id"), (p) => sql`${c.checkpointId} < ${p}`);
    }
    const entries = storedFilterEntries(options.filter);
    if (entries.length > 0) conditions.push(this.dialect.metadataMatches(entries));
    const shape = entries.length > 0 ? undefined : `list.${Object.keys(values).join(",")}`;

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
        values["cursor.id"] = cursor.checkpointId;
        values["cursor.thread"] = cursor.threadId;
        values["cursor.ns"] = cursor.ns;
        const [id, thread, cursorNs] = ["cursor.id", "cursor.thread", "cursor.ns"].map(sql.placeholder);
        page.push(
          sql`(${c.checkpointId} < ${id} or (${c.checkpointId} = ${id} and (${c.threadId} < ${thread} or (${c.threadId} = ${thread} and ${c.checkpointNs} < ${cursorNs}))))`,
        );
      }
      const size = Math.min(remaining, LIST_PAGE_SIZE);
      const where = () => (page.length > 0 ? sql.join(page, sql` and `) : sql`1 = 1`);
      const key = shape && `${shape}${cursor ? ".cursor" : ""}`;
      const { tuples, last } = await this.loadPage({ where, values, key }, size);
      for (const tuple of tuples) yield tuple;
      if (tuples.length < size) return;
      remaining -= tuples.length;
      cursor = last;
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
    if (!isRecord(checkpoint)) throw new InvalidInputError("put: checkpoint must be an object");
    if (!isRecord(newVersions)) throw new InvalidInputError("put: newVersions must be an object");
    if (checkpoint.channel_values !== undefined && !isRecord(checkpoint.channel_values)) {
      throw new InvalidInputError("put: checkpoint.channel_values must be an object");
    }
    if (!isRecord(checkpoint.channel_versions)) {
      throw new InvalidInputError("put: checkpoint.channel_versions must be an object");
    }
    const checkpointId = requireId(checkpoint.id, "checkpoint.id");

    // Serialise everything before touching the database, so bad input writes nothing.
    const { channel_values: values = {}, ...withoutValues } = checkpoint;
    const [checkpointType, checkpointBytes] = await this.serde.dumpsTyped(withoutValues);
    const metadataJson = serializeMetadata(metadata);
    const versionsJson = JSON.stringify(checkpoint.channel_versions);
    const blobRows: unknown[][] = [];
    for (const [channel, version] of Object.entries(newVersions)) {
      requireId(channel, "channel name");
      if (typeof version !== "string" && typeof version !== "number") {
        throw new InvalidInputError(`put: the version of channel "${channel}" must be a string or a number`);
      }
      const hasValue = Object.hasOwn(values, channel);
      const [type, bytes] = hasValue
        ? await this.serde.dumpsTyped((values as Record<string, unknown>)[channel])
        : ["empty", null];
      blobRows.push([threadId, ns, channel, String(version), type, bytes && toBuffer(bytes)]);
    }

    const { checkpoints: c, blobs: b } = this.dialect.columns;
    const statements: Statement[] = [];
    if (blobRows.length > 0) {
      // Versions are unique per branch, so an existing row already holds this value.
      const build = () =>
        this.dialect.insert({
          table: b.table,
          columns: [b.threadId, b.checkpointNs, b.channel, b.version, b.type, b.blob],
          rows: placeholderRows("blob", blobRows.length, 6),
          conflictTarget: [b.threadId, b.checkpointNs, b.channel, b.version],
          update: [],
        });
      statements.push(this.statement(`put.blobs.${blobRows.length}`, build, rowValues("blob", blobRows)));
    }
    const checkpointRow = [
      threadId,
      ns,
      checkpointId,
      parentId,
      checkpointType,
      toBuffer(checkpointBytes),
      versionsJson,
      metadataJson,
    ];
    const buildCheckpoint = () => {
      const [[thread, namespace, id, parent, type, data, versions, meta]] = placeholderRows("checkpoint", 1, 8);
      return this.dialect.insert({
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
          [thread, namespace, id, parent, type, data, this.dialect.jsonParam(versions), this.dialect.jsonParam(meta)],
        ],
        conflictTarget: [c.threadId, c.checkpointNs, c.checkpointId],
        update: [c.parentCheckpointId, c.checkpointType, c.checkpoint, c.channelVersions, c.metadata],
      });
    };
    statements.push(this.statement("put.checkpoint", buildCheckpoint, rowValues("checkpoint", [checkpointRow])));
    // Channels this put does not write refer to values its parent's steps stored: the
    // parent must still exist when it lands (a deleteThread may have removed both).
    const reliesOnStoredValues = Object.keys(checkpoint.channel_versions).some((channel) => !(channel in newVersions));
    const parentRows = () =>
      sql`select 1 from ${c.table} where ${c.threadId} = ${sql.placeholder("parent.thread")} and ${c.nsKey} = ${sql.placeholder("parent.ns")} and ${c.checkpointId} = ${sql.placeholder("parent.id")}`;
    const precondition =
      parentId !== null && reliesOnStoredValues
        ? {
            rows: this.statement("put.parent", parentRows, {
              "parent.thread": threadId,
              "parent.ns": this.dialect.nsKey(ns),
              "parent.id": parentId,
            }),
            failure: () =>
              new MissingParentError(
                `put: parent checkpoint "${parentId}" of thread "${threadId}" no longer exists (the thread was deleted or pruned meanwhile); nothing was written`,
              ),
          }
        : undefined;
    await this.dialect.atomically(statements, precondition);
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

    // Special channels share one idx per task: a later write to the same one replaces
    // an earlier one (as a resumed node's second `__resume__` does), also within a call.
    const special = new Map<number, unknown[]>();
    const regular: unknown[][] = [];
    for (const [i, write] of writes.entries()) {
      if (!Array.isArray(write) || typeof write[0] !== "string") {
        throw new InvalidInputError(`putWrites: write ${i} must be a [channel, value] pair`);
      }
      const [channel, value] = write;
      const [type, bytes] = await this.serde.dumpsTyped(value);
      const idx = WRITES_IDX_MAP[channel] ?? i;
      const row = [threadId, ns, checkpointId, taskId, idx, channel, type, toBuffer(bytes), taskPath];
      if (channel in WRITES_IDX_MAP) special.set(idx, row);
      else regular.push(row);
    }
    if (special.size + regular.length === 0) return;

    const w = this.dialect.columns.writes;
    const insertWrites = (kind: string, rows: unknown[][], update: Column[]) =>
      this.statement(
        `putWrites.${kind}.${rows.length}`,
        () =>
          this.dialect.insert({
            table: w.table,
            columns: [
              w.threadId,
              w.checkpointNs,
              w.checkpointId,
              w.taskId,
              w.idx,
              w.channel,
              w.type,
              w.blob,
              w.taskPath,
            ],
            rows: placeholderRows(kind, rows.length, 9),
            conflictTarget: [w.threadId, w.checkpointNs, w.checkpointId, w.taskId, w.idx],
            update,
          }),
        rowValues(kind, rows),
      );
    const statements: Statement[] = [];
    // Special channels (errors, interrupts, resumes) replace what the task wrote before;
    // a regular write is recorded once, so a retried task cannot change a stored result.
    if (special.size > 0)
      statements.push(insertWrites("special", [...special.values()], [w.channel, w.type, w.blob, w.taskPath]));
    if (regular.length > 0) statements.push(insertWrites("regular", regular, []));
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

  /**
   * One page of checkpoints with everything a tuple needs: the checkpoint rows, the
   * blobs their channel_versions name (each blob once, however many checkpoints of
   * the page share it) and their pending writes.
   */
  private async loadPage(
    { where, values, key }: PageCondition,
    limit: number,
  ): Promise<{ tuples: CheckpointTuple[]; last?: CheckpointKey }> {
    const c = this.dialect.columns.checkpoints;
    const page = (): SQL => sql`
      select ${c.threadId} as thread_id, ${c.checkpointNs} as checkpoint_ns, ${c.nsKey} as ns_key,
             ${c.checkpointId} as checkpoint_id, ${c.parentCheckpointId} as parent_checkpoint_id,
             ${c.checkpointType} as checkpoint_type, ${c.checkpoint} as checkpoint,
             ${c.channelVersions} as channel_versions, ${c.metadata} as metadata,
             row_number() over (order by ${c.checkpointId} desc, ${c.threadId} desc, ${c.checkpointNs} desc) as position
      from ${c.table} where ${where()}
      order by ${c.checkpointId} desc, ${c.threadId} desc, ${c.checkpointNs} desc
      limit ${sql.raw(String(limit))}`;
    const pageKey = key && `${key}.${limit}`;
    const rows = this.dialect.pageBlobs
      ? await this.queryPageAtOnce(page, values, pageKey)
      : await this.queryPageByKeys(this.statement(pageKey, page, values));

    const checkpointRows = rows
      .filter((row) => row.kind === "checkpoint")
      .sort((x, y) => Number(x.position) - Number(y.position));
    const blobs = new Map<string, Row>();
    const writes = new Map<string, Row[]>();
    for (const row of rows) {
      if (row.kind === "blob") {
        blobs.set(JSON.stringify([row.thread_id, row.checkpoint_ns, row.channel, row.version]), row);
      } else if (row.kind === "write") {
        const key = keyOf(rowKey(row));
        const list = writes.get(key);
        if (list) list.push(row);
        else writes.set(key, [row]);
      }
    }

    const tuples = await Promise.all(
      checkpointRows.map(async (row): Promise<CheckpointTuple> => {
        const key = rowKey(row);
        const stored = (await this.serde.loadsTyped(row.type as string, asBytes(row.data))) as Checkpoint;
        const channelValues: Record<string, unknown> = {};
        for (const [channel, version] of Object.entries(stored.channel_versions ?? {})) {
          const blob = blobs.get(JSON.stringify([key.threadId, key.ns, channel, String(version)]));
          if (!blob || blob.type === "empty") continue;
          channelValues[channel] = await this.serde.loadsTyped(blob.type as string, asBytes(blob.data));
        }
        const checkpoint: Checkpoint = { ...stored, channel_values: channelValues };
        const parentId = (row.parent_checkpoint_id as string | null) ?? null;
        if (checkpoint.v < 4 && parentId !== null)
          await this.migratePendingSends(checkpoint, { ...key, checkpointId: parentId });
        return {
          config: configOf(key),
          checkpoint,
          metadata: parseMetadata(row.metadata) as CheckpointMetadata,
          parentConfig: parentId ? configOf({ ...key, checkpointId: parentId }) : undefined,
          pendingWrites: await this.decodeWrites(writes.get(keyOf(key)) ?? []),
        };
      }),
    );
    const lastRow = checkpointRows[checkpointRows.length - 1];
    return { tuples, last: lastRow ? rowKey(lastRow) : undefined };
  }

  /** Checkpoints, writes and blobs of a page in one query, where the dialect can name the blobs in SQL. */
  private async queryPageAtOnce(page: () => SQL, values: Values, key: string | undefined): Promise<Row[]> {
    const { blobs: b, writes: w } = this.dialect.columns;
    const build = () => sql`
      with page as (${page()})
      select 'checkpoint' as ${sql.identifier("kind")}, page.position as ${sql.identifier("position")},
             page.thread_id as ${sql.identifier("thread_id")}, page.checkpoint_ns as ${sql.identifier("checkpoint_ns")},
             page.checkpoint_id as ${sql.identifier("checkpoint_id")},
             page.parent_checkpoint_id as ${sql.identifier("parent_checkpoint_id")},
             page.checkpoint_type as ${sql.identifier("type")}, page.checkpoint as ${sql.identifier("data")},
             page.metadata as ${sql.identifier("metadata")}, null as ${sql.identifier("channel")},
             null as ${sql.identifier("version")}, null as ${sql.identifier("task_id")}, null as ${sql.identifier("idx")},
             null as ${sql.identifier("task_path")}
      from page
      union all
      -- Writes before blobs: PostgreSQL types a union's columns pair by pair, left to right.
      select 'write', null, ${w.threadId}, ${w.checkpointNs}, ${w.checkpointId}, null, ${w.type}, ${w.blob}, null,
             ${w.channel}, null, ${w.taskId}, ${w.idx}, ${w.taskPath}
      from page join ${w.table} on ${w.threadId} = page.thread_id and ${w.nsKey} = page.ns_key
        and ${w.checkpointId} = page.checkpoint_id
      union all
      select 'blob', null, page_blobs.thread_id, page_blobs.checkpoint_ns, null, null, page_blobs.type,
             page_blobs.blob, null, page_blobs.channel, page_blobs.version, null, null, null
      from ${this.dialect.pageBlobs?.(b)}`;
    return this.dialect.query(this.statement(key && `${key}.atOnce`, build, values));
  }

  /** The page's checkpoints, then their writes and blobs by key: two plain queries. */
  private async queryPageByKeys(page: Statement): Promise<Row[]> {
    const { blobs: b, writes: w } = this.dialect.columns;
    const checkpoints = (await this.dialect.query(page)).map(
      (row): Row => ({
        ...row,
        kind: "checkpoint",
        type: row.checkpoint_type,
        data: row.checkpoint,
      }),
    );
    interface Group {
      threadId: string;
      ns: string;
      ids: string[];
      blobs: Map<string, [string, string]>;
    }
    const groups = new Map<string, Group>();
    for (const row of checkpoints) {
      const { threadId, ns, checkpointId } = rowKey(row);
      const groupKey = JSON.stringify([threadId, ns]);
      const group: Group = groups.get(groupKey) ?? { threadId, ns, ids: [], blobs: new Map() };
      groups.set(groupKey, group);
      group.ids.push(checkpointId);
      const versions = parseJsonColumn(row.channel_versions) as Record<string, unknown>;
      for (const [channel, version] of Object.entries(versions)) {
        group.blobs.set(JSON.stringify([channel, String(version)]), [channel, String(version)]);
      }
    }
    if (groups.size === 0) return [];

    // The statement's shape is the number of checkpoints and blobs per (thread, namespace).
    const list = [...groups.values()];
    const values: Values = {};
    list.forEach((g, i) => {
      values[`g${i}.thread`] = g.threadId;
      values[`g${i}.ns`] = this.dialect.nsKey(g.ns);
      g.ids.forEach((id, k) => {
        values[`g${i}.id${k}`] = id;
      });
      [...g.blobs.values()].forEach(([channel, version], k) => {
        values[`g${i}.channel${k}`] = channel;
        values[`g${i}.version${k}`] = version;
      });
    });
    const shape = list.map((g) => `${g.ids.length}/${g.blobs.size}`).join(",");
    const build = () => {
      const p = sql.placeholder;
      const commas = (items: SQL[]) => sql.join(items, sql`, `);
      const writeKeys = list.map(
        (g, i) =>
          sql`(${w.threadId} = ${p(`g${i}.thread`)} and ${w.nsKey} = ${p(`g${i}.ns`)} and ${w.checkpointId} in (${commas(g.ids.map((_, k) => sql`${p(`g${i}.id${k}`)}`))}))`,
      );
      const blobKeys = list.flatMap((g, i) =>
        g.blobs.size === 0
          ? []
          : [
              sql`(${b.threadId} = ${p(`g${i}.thread`)} and ${b.nsKey} = ${p(`g${i}.ns`)} and (${b.channel}, ${b.version}) in (${commas([...g.blobs.keys()].map((_, k) => sql`(${p(`g${i}.channel${k}`)}, ${p(`g${i}.version${k}`)})`))}))`,
            ],
      );
      const blobBranch =
        blobKeys.length === 0
          ? sql``
          : sql` union all
      select 'blob', ${b.threadId}, ${b.checkpointNs}, null, ${b.type}, ${b.blob}, ${b.channel}, ${b.version}, null, null, null
      from ${b.table} where ${sql.join(blobKeys, sql` or `)}`;
      return sql`
      select 'write' as ${sql.identifier("kind")}, ${as(w.threadId, "thread_id")}, ${as(w.checkpointNs, "checkpoint_ns")},
             ${as(w.checkpointId, "checkpoint_id")}, ${as(w.type, "type")}, ${as(w.blob, "data")},
             ${as(w.channel, "channel")}, null as ${sql.identifier("version")}, ${as(w.taskId, "task_id")},
             ${as(w.idx, "idx")}, ${as(w.taskPath, "task_path")}
      from ${w.table} where ${sql.join(writeKeys, sql` or `)}${blobBranch}`;
    };
    const related = await this.dialect.query(this.statement(`related.${shape}`, build, values));
    return [...checkpoints, ...related];
  }

  /** A template from `build` with its values: cached when `key` names its shape, else built for this call. */
  private statement(key: string | undefined, build: () => SQL, values: Values): Bound {
    return { template: key === undefined ? build() : this.templates.get(key, build), values };
  }

  /** Pending writes in LangGraph's (task path, task id, idx) order. */
  private async decodeWrites(rows: Row[]): Promise<CheckpointPendingWrite[]> {
    const sorted = rows
      .map((row) => ({ row, sortKey: writesSortKey(row.task_path as string, row.task_id as string, Number(row.idx)) }))
      .sort((x, y) => compareWritesSortKeys(x.sortKey, y.sortKey));
    return Promise.all(
      sorted.map(
        async ({ row }): Promise<CheckpointPendingWrite> => [
          row.task_id as string,
          row.channel as string,
          await this.serde.loadsTyped(row.type as string, asBytes(row.data)),
        ],
      ),
    );
  }

  /**
   * Checkpoints older than format v4 kept pending sends as writes to the TASKS channel
   * of their parent; LangGraph now expects them among the channel values.
   */
  private async migratePendingSends(checkpoint: Checkpoint, parent: CheckpointKey): Promise<void> {
    const w = this.dialect.columns.writes;
    const rows = await this.dialect.query(sql`
      select ${as(w.taskId, "task_id")}, ${as(w.idx, "idx")}, ${as(w.channel, "channel")}, ${as(w.type, "type")},
             ${as(w.blob, "data")}, ${as(w.taskPath, "task_path")}
      from ${w.table}
      where ${w.threadId} = ${parent.threadId} and ${w.nsKey} = ${this.dialect.nsKey(parent.ns)}
        and ${w.checkpointId} = ${parent.checkpointId} and ${w.channel} = ${TASKS}`);
    if (rows.length > 0)
      this.applyPendingSends(
        checkpoint,
        (await this.decodeWrites(rows)).map(([, , value]) => value),
      );
  }

  private applyPendingSends(checkpoint: Checkpoint, sends: unknown[]): void {
    checkpoint.channel_values[TASKS] = sends;
    const versions = Object.values(checkpoint.channel_versions);
    checkpoint.channel_versions[TASKS] =
      versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
  }
}
