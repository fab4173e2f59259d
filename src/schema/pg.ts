/**
 * The drizzle definitions of the checkpoint tables for PostgreSQL, published as
 * `langgraph-checkpoint-drizzle/pg`.
 */
import {
  bigint,
  boolean,
  customType,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgSchema,
  pgTable,
  primaryKey,
  text,
  timestamp,
} from "drizzle-orm/pg-core";
import { optionKeys } from "../known-options.js";
import { checkTableOptions } from "./table-options.js";

const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({
  dataType: () => "bytea",
});

export interface PgTableOptions {
  /** Prepended to every table and index name, e.g. "lg_". */
  prefix?: string;
  /** Postgres schema that holds the tables; the search path when omitted. */
  schema?: string;
}

const TABLE_OPTION_KEYS = optionKeys<PgTableOptions>({ prefix: true, schema: true });

/**
 * The saver's three tables for PostgreSQL. The shipped migrations hash-partition
 * them by thread_id (drizzle-kit cannot express PARTITION BY, so that clause lives
 * in the migration SQL only; these definitions stay the source of truth for diffs).
 */
export function checkpointTables(options: PgTableOptions = {}) {
  checkTableOptions(options, "checkpointTables", TABLE_OPTION_KEYS);
  const prefix = options.prefix ?? "";
  // Same table shape either way; only the schema qualifier differs.
  const table = (options.schema ? pgSchema(options.schema).table : pgTable) as typeof pgTable;

  const checkpoints = table(
    `${prefix}checkpoints`,
    {
      threadId: text("thread_id").notNull(),
      checkpointNs: text("checkpoint_ns").notNull().default(""),
      checkpointId: text("checkpoint_id").notNull(),
      parentCheckpointId: text("parent_checkpoint_id"),
      checkpointType: text("checkpoint_type").notNull(),
      checkpoint: bytea("checkpoint").notNull(),
      // Also inside `checkpoint`; kept as JSON so SQL can find a checkpoint's blobs.
      channelVersions: jsonb("channel_versions").notNull(),
      metadata: jsonb("metadata").notNull(),
      createdAt: timestamp("created_at", { withTimezone: true, precision: 3 }).notNull().defaultNow(),
    },
    (t) => [
      primaryKey({ name: `${prefix}checkpoints_pk`, columns: [t.threadId, t.checkpointNs, t.checkpointId] }),
      // Containment (@>) lookups for metadata filters; jsonb_path_ops keeps it small. No
      // pending list (fastupdate): every search would scan it, up to 4 MB per partition.
      index(`${prefix}checkpoints_metadata_idx`)
        .using("gin", t.metadata.op("jsonb_path_ops"))
        .with({ fastupdate: false }),
      // Cross-thread history, newest first.
      index(`${prefix}checkpoints_checkpoint_id_idx`).on(t.checkpointId),
      // A thread's history across namespaces, newest first.
      index(`${prefix}checkpoints_thread_checkpoint_id_idx`).on(t.threadId, t.checkpointId),
    ],
  );

  const checkpointBlobs = table(
    `${prefix}checkpoint_blobs`,
    {
      threadId: text("thread_id").notNull(),
      checkpointNs: text("checkpoint_ns").notNull().default(""),
      channel: text("channel").notNull(),
      version: text("version").notNull(),
      type: text("type").notNull(),
      blob: bytea("blob"),
      // Set on an incremental value (src/savers/values/deltas.ts): JSON {seq, bases}, the versions it extends.
      deltaChain: text("delta_chain"),
    },
    (t) => [
      primaryKey({ name: `${prefix}checkpoint_blobs_pk`, columns: [t.threadId, t.checkpointNs, t.channel, t.version] }),
    ],
  );

  const checkpointWrites = table(
    `${prefix}checkpoint_writes`,
    {
      threadId: text("thread_id").notNull(),
      checkpointNs: text("checkpoint_ns").notNull().default(""),
      checkpointId: text("checkpoint_id").notNull(),
      taskId: text("task_id").notNull(),
      idx: integer("idx").notNull(),
      channel: text("channel").notNull(),
      type: text("type").notNull(),
      blob: bytea("blob"),
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
  const checkpointThreads = table(
    `${prefix}checkpoint_threads`,
    {
      threadId: text("thread_id").primaryKey(),
      // The thread's first checkpoint, in any namespace.
      createdAt: timestamp("created_at", { withTimezone: true, precision: 3 }).notNull(),
      // The thread's newest checkpoint, in any namespace: what retention calls idle.
      updatedAt: timestamp("updated_at", { withTimezone: true, precision: 3 }).notNull(),
      // Checkpoints of the root namespace "".
      checkpoints: integer("checkpoints").notNull().default(0),
      // The newest root checkpoint (greatest id) and its metadata; null with only subgraph checkpoints.
      latestCheckpointId: text("latest_checkpoint_id"),
      metadata: jsonb("metadata"),
      // No retention policy touches a pinned thread.
      pinned: boolean("pinned").notNull().default(false),
    },
    (t) => [
      // Thread id breaks ties, so pages are stable.
      index(`${prefix}checkpoint_threads_updated_at_idx`).on(t.updatedAt, t.threadId),
      index(`${prefix}checkpoint_threads_created_at_idx`).on(t.createdAt, t.threadId),
      index(`${prefix}checkpoint_threads_metadata_idx`)
        .using("gin", t.metadata.op("jsonb_path_ops"))
        .with({ fastupdate: false }),
    ],
  );

  return { checkpoints, checkpointBlobs, checkpointWrites, checkpointThreads };
}

export type PgCheckpointTables = ReturnType<typeof checkpointTables>;

const defaults = checkpointTables();
export const checkpoints = defaults.checkpoints;
export const checkpointBlobs = defaults.checkpointBlobs;
export const checkpointWrites = defaults.checkpointWrites;
export const checkpointThreads = defaults.checkpointThreads;

/**
 * Namespace paths and keys compare byte by byte ("C" collation) whatever the database's
 * default collation: prefix search is a range on the path (src/savers/store/namespaces.ts),
 * and items sort alike on every database.
 */
const pathText = customType<{ data: string }>({ dataType: () => 'text COLLATE "C"' });

/**
 * The store's table for PostgreSQL (`DrizzleStore`, LangGraph's BaseStore): one row per
 * item, keyed by its encoded namespace path and key. Times are epoch milliseconds.
 */
export function storeTables(options: PgTableOptions = {}) {
  checkTableOptions(options, "storeTables", TABLE_OPTION_KEYS);
  const prefix = options.prefix ?? "";
  const table = (options.schema ? pgSchema(options.schema).table : pgTable) as typeof pgTable;
  const storeItems = table(
    `${prefix}store_items`,
    {
      nsPath: pathText("ns_path").notNull(),
      key: pathText("item_key").notNull(),
      value: jsonb("value").notNull(),
      // The item's embeddings (float32, little-endian, one after the other) when the store has an index.
      embeddings: bytea("embeddings"),
      createdAt: bigint("created_at", { mode: "number" }).notNull(),
      updatedAt: bigint("updated_at", { mode: "number" }).notNull(),
      // Null: never expires. ttl_minutes is what a read that refreshes adds to its time.
      expiresAt: bigint("expires_at", { mode: "number" }),
      ttlMinutes: doublePrecision("ttl_minutes"),
    },
    (t) => [
      primaryKey({ name: `${prefix}store_items_pk`, columns: [t.nsPath, t.key] }),
      index(`${prefix}store_items_expires_at_idx`).on(t.expiresAt),
    ],
  );
  return { storeItems };
}

export type PgStoreTables = ReturnType<typeof storeTables>;

export const storeItems = storeTables().storeItems;
