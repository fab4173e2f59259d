/**
 * The drizzle definitions of the checkpoint tables for SQLite, published as
 * `langgraph-checkpoint-drizzle/sqlite`.
 */
import { sql } from "drizzle-orm";
import { blob, index, integer, primaryKey, real, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { optionKeys } from "../known-options.js";
import { checkTableOptions } from "./table-options.js";

/**
 * The one `source` the partial `meta_source` index leaves out. A query uses that index
 * only when its WHERE clause holds the index's own condition, so the SQLite dialect
 * adds `meta_source <> 'loop'` to a filter on any other source.
 */
export const UNINDEXED_SOURCE = "loop";

export interface SQLiteTableOptions {
  /** Prepended to every table and index name, e.g. "lg_". */
  prefix?: string;
}

const TABLE_OPTION_KEYS = optionKeys<SQLiteTableOptions>({ prefix: true });

/**
 * The saver's three tables for SQLite. `meta_source` and `meta_step` are virtual
 * generated columns so metadata filters on them can use plain indexes (drizzle-kit
 * cannot write json_extract index expressions, and the planner only matches those
 * when the query repeats them exactly).
 */
export function checkpointTables(options: SQLiteTableOptions = {}) {
  checkTableOptions(options, "checkpointTables", TABLE_OPTION_KEYS);
  const prefix = options.prefix ?? "";

  const checkpoints = sqliteTable(
    `${prefix}checkpoints`,
    {
      threadId: text("thread_id").notNull(),
      checkpointNs: text("checkpoint_ns").notNull().default(""),
      checkpointId: text("checkpoint_id").notNull(),
      parentCheckpointId: text("parent_checkpoint_id"),
      checkpointType: text("checkpoint_type").notNull(),
      checkpoint: blob("checkpoint", { mode: "buffer" }).notNull(),
      // Also inside `checkpoint`; kept as JSON so SQL can find a checkpoint's blobs.
      channelVersions: text("channel_versions", { mode: "json" }).notNull(),
      metadata: text("metadata", { mode: "json" }).notNull(),
      metaSource: text("meta_source").generatedAlwaysAs(
        sql`case when json_type(metadata, '$.source') = 'text' then json_extract(metadata, '$.source') end`,
        { mode: "virtual" },
      ),
      metaStep: real("meta_step").generatedAlwaysAs(
        sql`case when json_type(metadata, '$.step') in ('integer', 'real') then json_extract(metadata, '$.step') end`,
        { mode: "virtual" },
      ),
      metaRunId: text("meta_run_id").generatedAlwaysAs(
        sql`case when json_type(metadata, '$.run_id') = 'text' then json_extract(metadata, '$.run_id') end`,
        { mode: "virtual" },
      ),
      // Milliseconds since the epoch, UTC.
      createdAt: integer("created_at").notNull().default(sql`(cast(unixepoch('subsec') * 1000 as integer))`),
    },
    (t) => [
      primaryKey({ name: `${prefix}checkpoints_pk`, columns: [t.threadId, t.checkpointNs, t.checkpointId] }),
      index(`${prefix}checkpoints_checkpoint_id_idx`).on(t.checkpointId),
      // Partial: most checkpoints are a graph's "loop" steps, a value no filter narrows
      // down by; the others ("input", "update", "fork") are the ones worth an index entry.
      index(`${prefix}checkpoints_meta_source_idx`)
        .on(t.metaSource, t.checkpointId)
        .where(sql.raw(`meta_source <> '${UNINDEXED_SOURCE}'`)),
      index(`${prefix}checkpoints_meta_step_idx`).on(t.metaStep, t.checkpointId),
      // Partial: checkpoints without a run id (a graph given none) cost no index entry.
      index(`${prefix}checkpoints_meta_run_id_idx`).on(t.metaRunId).where(sql.raw("meta_run_id is not null")),
      // A thread's history across namespaces, newest first.
      index(`${prefix}checkpoints_thread_checkpoint_id_idx`).on(t.threadId, t.checkpointId),
    ],
  );

  const checkpointBlobs = sqliteTable(
    `${prefix}checkpoint_blobs`,
    {
      threadId: text("thread_id").notNull(),
      checkpointNs: text("checkpoint_ns").notNull().default(""),
      channel: text("channel").notNull(),
      version: text("version").notNull(),
      type: text("type").notNull(),
      blob: blob("blob", { mode: "buffer" }),
      // Set on an incremental value (src/savers/values/deltas.ts): JSON {seq, bases}, the versions it extends.
      deltaChain: text("delta_chain"),
    },
    (t) => [
      primaryKey({ name: `${prefix}checkpoint_blobs_pk`, columns: [t.threadId, t.checkpointNs, t.channel, t.version] }),
    ],
  );

  const checkpointWrites = sqliteTable(
    `${prefix}checkpoint_writes`,
    {
      threadId: text("thread_id").notNull(),
      checkpointNs: text("checkpoint_ns").notNull().default(""),
      checkpointId: text("checkpoint_id").notNull(),
      taskId: text("task_id").notNull(),
      idx: integer("idx").notNull(),
      channel: text("channel").notNull(),
      type: text("type").notNull(),
      blob: blob("blob", { mode: "buffer" }),
      taskPath: text("task_path").notNull().default(""),
    },
    (t) => [
      primaryKey({
        name: `${prefix}checkpoint_writes_pk`,
        columns: [t.threadId, t.checkpointNs, t.checkpointId, t.taskId, t.idx],
      }),
    ],
  );

  // One row per thread that has a checkpoint, kept current by every write and removal
  // (see src/savers/write/write-statements.ts): thread search and retention read it, not the checkpoints.
  const checkpointThreads = sqliteTable(
    `${prefix}checkpoint_threads`,
    {
      threadId: text("thread_id").primaryKey(),
      // Epoch milliseconds like checkpoints.created_at: the first checkpoint, in any namespace,
      createdAt: integer("created_at").notNull(),
      // and the newest one, in any namespace (what retention calls idle).
      updatedAt: integer("updated_at").notNull(),
      // Checkpoints of the root namespace "".
      checkpoints: integer("checkpoints").notNull().default(0),
      // The newest root checkpoint (greatest id) and its metadata; null with only subgraph checkpoints.
      latestCheckpointId: text("latest_checkpoint_id"),
      metadata: text("metadata", { mode: "json" }),
      // No retention policy touches a pinned thread.
      pinned: integer("pinned", { mode: "boolean" }).notNull().default(false),
      // "This user's threads" is the common search: an indexed column as for checkpoints' source.
      metaUserId: text("meta_user_id").generatedAlwaysAs(
        sql`case when json_type(metadata, '$.user_id') = 'text' then json_extract(metadata, '$.user_id') end`,
        { mode: "virtual" },
      ),
    },
    (t) => [
      // Thread id breaks ties, so pages are stable.
      index(`${prefix}checkpoint_threads_updated_at_idx`).on(t.updatedAt, t.threadId),
      index(`${prefix}checkpoint_threads_created_at_idx`).on(t.createdAt, t.threadId),
      // Partial: a thread without a user id in its metadata costs no entry (the entry moves with
      // updated_at, so an indexed thread pays for it on every put).
      index(`${prefix}checkpoint_threads_meta_user_id_idx`)
        .on(t.metaUserId, t.updatedAt)
        .where(sql.raw("meta_user_id is not null")),
    ],
  );

  return { checkpoints, checkpointBlobs, checkpointWrites, checkpointThreads };
}

export type SQLiteCheckpointTables = ReturnType<typeof checkpointTables>;

const defaults = checkpointTables();
export const checkpoints = defaults.checkpoints;
export const checkpointBlobs = defaults.checkpointBlobs;
export const checkpointWrites = defaults.checkpointWrites;
export const checkpointThreads = defaults.checkpointThreads;

/**
 * The store's table for SQLite (`DrizzleStore`, LangGraph's BaseStore): one row per
 * item, keyed by its encoded namespace path (compared byte by byte, SQLite's default
 * BINARY collation) and key. Times are epoch milliseconds.
 */
export function storeTables(options: SQLiteTableOptions = {}) {
  checkTableOptions(options, "storeTables", TABLE_OPTION_KEYS);
  const prefix = options.prefix ?? "";
  const storeItems = sqliteTable(
    `${prefix}store_items`,
    {
      nsPath: text("ns_path").notNull(),
      key: text("item_key").notNull(),
      value: text("value").notNull(),
      // The item's embeddings (float32, little-endian, one after the other) when the store has an index.
      embeddings: blob("embeddings", { mode: "buffer" }),
      createdAt: integer("created_at").notNull(),
      updatedAt: integer("updated_at").notNull(),
      // Null: never expires. ttl_minutes is what a read that refreshes adds to its time.
      expiresAt: integer("expires_at"),
      ttlMinutes: real("ttl_minutes"),
    },
    (t) => [
      primaryKey({ name: `${prefix}store_items_pk`, columns: [t.nsPath, t.key] }),
      index(`${prefix}store_items_expires_at_idx`).on(t.expiresAt),
    ],
  );
  return { storeItems };
}

export type SQLiteStoreTables = ReturnType<typeof storeTables>;

export const storeItems = storeTables().storeItems;
