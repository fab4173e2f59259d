/**
 * The drizzle definitions of the checkpoint tables for MySQL and MariaDB, published as
 * `langgraph-checkpoint-drizzle/mysql`, with the optional metadata index side table.
 */
import { sql } from "drizzle-orm";
import {
  bigint,
  binary,
  boolean,
  customType,
  double,
  index,
  int,
  json,
  mysqlTable,
  primaryKey,
  varbinary,
} from "drizzle-orm/mysql-core";
import { optionKeys } from "../known-options.js";
import { checkTableOptions } from "./table-options.js";

const longblob = customType<{ data: Uint8Array; driverData: Uint8Array }>({
  dataType: () => "longblob",
});

/**
 * Ids are bytes (UTF-8), so they compare exactly: MySQL's text collations, even the
 * binary ones of MariaDB, ignore trailing spaces ("a" = "a ") and some ignore case.
 * 1020 bytes hold 255 characters of any script. The dialect turns them back into text.
 */
const id = (name: string) => varbinary(name, { length: 1020 });

/** Channel versions are ASCII (zero-padded counter + random suffix); keeps the blob key short. */
const version = customType<{ data: string }>({
  dataType: () => "varchar(255) CHARACTER SET ascii COLLATE ascii_bin",
});

/**
 * Namespaces and write channels are bytes too: even utf8mb4_bin pads ("sub" = "sub "),
 * and the NO PAD binary collations are named differently on MySQL and MariaDB. Up to
 * 65,535 bytes; namespaces have no useful length bound, so keys use a hash of them.
 */
const bytesText = customType<{ data: string }>({ dataType: () => "blob" });

/**
 * Other text states its character set, so the database's defaults (latin1, a
 * case-insensitive collation) never apply. Not compared in keys.
 */
const utf8Text = customType<{ data: string }>({ dataType: () => "text CHARACTER SET utf8mb4 COLLATE utf8mb4_bin" });
const utf8Varchar = customType<{ data: string; config: { length: number } }>({
  dataType: (config) => `varchar(${config?.length ?? 255}) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`,
});

/**
 * SHA-256 of a long text column, for keys: namespaces of nested subgraphs and task
 * ids have no useful length bound. The saver's MySQL dialect writes these (MariaDB
 * refuses generated columns in a primary key).
 */
const sha256 = (name: string) => binary(name, { length: 32 }).notNull();

export interface MySqlTableOptions {
  /** Prepended to every table and index name, e.g. "lg_". */
  prefix?: string;
}

const TABLE_OPTION_KEYS = optionKeys<MySqlTableOptions>({ prefix: true });

/**
 * The saver's three tables for MySQL 8 / MariaDB 10.11. InnoDB keys are limited to
 * 3072 bytes, hence the hashed namespace and task id in primary keys. `meta_source`,
 * `meta_step` and `meta_run_id` are generated from the metadata so filters on them use ordinary
 * indexes (MariaDB has no functional indexes).
 */
export function checkpointTables(options: MySqlTableOptions = {}) {
  checkTableOptions(options, "checkpointTables", TABLE_OPTION_KEYS);
  const prefix = options.prefix ?? "";

  const checkpoints = mysqlTable(
    `${prefix}checkpoints`,
    {
      threadId: id("thread_id").notNull(),
      checkpointNs: bytesText("checkpoint_ns").notNull(),
      nsHash: sha256("ns_hash"),
      checkpointId: id("checkpoint_id").notNull(),
      parentCheckpointId: id("parent_checkpoint_id"),
      checkpointType: utf8Varchar("checkpoint_type", { length: 64 }).notNull(),
      checkpoint: longblob("checkpoint").notNull(),
      // Also inside `checkpoint`; kept as JSON so SQL can find a checkpoint's blobs.
      channelVersions: json("channel_versions").notNull(),
      metadata: json("metadata").notNull(),
      metaSource: utf8Varchar("meta_source", { length: 64 }).generatedAlwaysAs(
        sql`case when json_type(json_extract(metadata, '$.source')) = 'STRING' and char_length(json_unquote(json_extract(metadata, '$.source'))) <= 64 then json_unquote(json_extract(metadata, '$.source')) end`,
        { mode: "virtual" },
      ),
      metaStep: double("meta_step").generatedAlwaysAs(
        sql`case when json_type(json_extract(metadata, '$.step')) in ('INTEGER', 'UNSIGNED INTEGER', 'DOUBLE', 'DECIMAL') then json_extract(metadata, '$.step') + 0 end`,
        { mode: "virtual" },
      ),
      metaRunId: utf8Varchar("meta_run_id", { length: 255 }).generatedAlwaysAs(
        sql`case when json_type(json_extract(metadata, '$.run_id')) = 'STRING' and char_length(json_unquote(json_extract(metadata, '$.run_id'))) <= 255 then json_unquote(json_extract(metadata, '$.run_id')) end`,
        { mode: "virtual" },
      ),
      // Milliseconds since the epoch, UTC, as on SQLite: a TIMESTAMP ends in 2038 and is
      // read in the session's time zone. UTC_TIMESTAMP and TIMESTAMPDIFF have neither limit.
      createdAt: bigint("created_at", { mode: "number" })
        .notNull()
        .default(sql`(timestampdiff(microsecond, '1970-01-01 00:00:00', utc_timestamp(3)) div 1000)`),
    },
    (t) => [
      primaryKey({ name: `${prefix}checkpoints_pk`, columns: [t.threadId, t.nsHash, t.checkpointId] }),
      index(`${prefix}checkpoints_checkpoint_id_idx`).on(t.checkpointId),
      index(`${prefix}checkpoints_meta_source_idx`).on(t.metaSource, t.checkpointId),
      index(`${prefix}checkpoints_meta_step_idx`).on(t.metaStep, t.checkpointId),
      index(`${prefix}checkpoints_meta_run_id_idx`).on(t.metaRunId),
      // A thread's history across namespaces, newest first.
      index(`${prefix}checkpoints_thread_checkpoint_id_idx`).on(t.threadId, t.checkpointId),
    ],
  );

  const checkpointBlobs = mysqlTable(
    `${prefix}checkpoint_blobs`,
    {
      threadId: id("thread_id").notNull(),
      checkpointNs: bytesText("checkpoint_ns").notNull(),
      nsHash: sha256("ns_hash"),
      channel: id("channel").notNull(),
      version: version("version").notNull(),
      type: utf8Varchar("type", { length: 64 }).notNull(),
      blob: longblob("blob"),
      // Set on an incremental value (src/savers/values/deltas.ts): JSON {seq, bases}, the versions it extends.
      deltaChain: bytesText("delta_chain"),
    },
    (t) => [
      primaryKey({ name: `${prefix}checkpoint_blobs_pk`, columns: [t.threadId, t.nsHash, t.channel, t.version] }),
    ],
  );

  const checkpointWrites = mysqlTable(
    `${prefix}checkpoint_writes`,
    {
      threadId: id("thread_id").notNull(),
      checkpointNs: bytesText("checkpoint_ns").notNull(),
      nsHash: sha256("ns_hash"),
      checkpointId: id("checkpoint_id").notNull(),
      taskId: id("task_id").notNull(),
      taskHash: sha256("task_hash"),
      idx: int("idx").notNull(),
      channel: bytesText("channel").notNull(),
      type: utf8Varchar("type", { length: 64 }).notNull(),
      blob: longblob("blob"),
      taskPath: utf8Text("task_path").notNull(),
    },
    (t) => [
      primaryKey({
        name: `${prefix}checkpoint_writes_pk`,
        columns: [t.threadId, t.nsHash, t.checkpointId, t.taskHash, t.idx],
      }),
    ],
  );

  // One row per thread that has a checkpoint, kept current by every write and removal
  // (see src/savers/write/write-statements.ts): thread search and retention read it, not the checkpoints.
  const checkpointThreads = mysqlTable(
    `${prefix}checkpoint_threads`,
    {
      threadId: id("thread_id").primaryKey(),
      // Epoch milliseconds like checkpoints.created_at: the first checkpoint, in any namespace,
      createdAt: bigint("created_at", { mode: "number" }).notNull(),
      // and the newest one, in any namespace (what retention calls idle).
      updatedAt: bigint("updated_at", { mode: "number" }).notNull(),
      // Checkpoints of the root namespace "".
      checkpoints: int("checkpoints").notNull().default(0),
      // The newest root checkpoint (greatest id) and its metadata; null with only subgraph checkpoints.
      latestCheckpointId: id("latest_checkpoint_id"),
      metadata: json("metadata"),
      // No retention policy touches a pinned thread.
      pinned: boolean("pinned").notNull().default(false),
      // "This user's threads" is the common search: an indexed column as for checkpoints' source.
      metaUserId: utf8Varchar("meta_user_id", { length: 255 }).generatedAlwaysAs(
        sql`case when json_type(json_extract(metadata, '$.user_id')) = 'STRING' and char_length(json_unquote(json_extract(metadata, '$.user_id'))) <= 255 then json_unquote(json_extract(metadata, '$.user_id')) end`,
        { mode: "stored" },
      ),
    },
    (t) => [
      // Thread id breaks ties, so pages are stable.
      index(`${prefix}checkpoint_threads_updated_at_idx`).on(t.updatedAt, t.threadId),
      index(`${prefix}checkpoint_threads_created_at_idx`).on(t.createdAt, t.threadId),
      index(`${prefix}checkpoint_threads_meta_user_id_idx`).on(t.metaUserId, t.updatedAt),
    ],
  );

  return { checkpoints, checkpointBlobs, checkpointWrites, checkpointThreads };
}

/**
 * An inverted index of the scalar top-level metadata values of the checkpoints table
 * (MariaDB has no multi-valued index): one row per key and value, kept by triggers on
 * that table (see the migration `metadata_index` and src/dialects/mysql-metadata-index.ts).
 * Keys and values are hashed, so any key or string fits in the index. Usable for any
 * table with a metadata column; `name` also prefixes its key and index names.
 */
export function metadataIndexTable(name: string) {
  return mysqlTable(
    name,
    {
      threadId: id("thread_id").notNull(),
      nsHash: sha256("ns_hash"),
      checkpointId: id("checkpoint_id").notNull(),
      keyHash: sha256("key_hash"),
      // A hash of the value's type and text; numbers share one marker and compare in value_number.
      valueHash: sha256("value_hash"),
      valueNumber: double("value_number"),
    },
    (t) => [
      primaryKey({ name: `${name}_pk`, columns: [t.threadId, t.nsHash, t.checkpointId, t.keyHash] }),
      index(`${name}_value_idx`).on(t.keyHash, t.valueHash, t.valueNumber, t.checkpointId),
    ],
  );
}

export type MySqlMetadataIndexTable = ReturnType<typeof metadataIndexTable>;

/**
 * The side table is optional and not made by `checkpointTables` (it needs triggers,
 * which drizzle-kit cannot write): without it, filters on other keys scan.
 */
export type MySqlCheckpointTables = ReturnType<typeof checkpointTables> & {
  checkpointMetadata?: MySqlMetadataIndexTable;
};

const defaults = checkpointTables();
export const checkpoints = defaults.checkpoints;
export const checkpointBlobs = defaults.checkpointBlobs;
export const checkpointWrites = defaults.checkpointWrites;
export const checkpointThreads = defaults.checkpointThreads;
/** The metadata index of the saver's own migrations (see `metadataIndexTable`). */
export const checkpointMetadata = metadataIndexTable("checkpoint_metadata");

/**
 * The store's table for MySQL and MariaDB (`DrizzleStore`, LangGraph's BaseStore): one
 * row per item. Namespace paths and keys are bytes (UTF-8), so they compare exactly and
 * in code point order; together they fit InnoDB's 3072-byte key (the store refuses
 * longer ones). Times are epoch milliseconds.
 */
export function storeTables(options: MySqlTableOptions = {}) {
  checkTableOptions(options, "storeTables", TABLE_OPTION_KEYS);
  const prefix = options.prefix ?? "";
  const storeItems = mysqlTable(
    `${prefix}store_items`,
    {
      nsPath: varbinary("ns_path", { length: MYSQL_STORE_PATH_BYTES }).notNull(),
      key: varbinary("item_key", { length: MYSQL_STORE_KEY_BYTES }).notNull(),
      value: json("value").notNull(),
      // The item's embeddings (float32, little-endian, one after the other) when the store has an index.
      embeddings: longblob("embeddings"),
      createdAt: bigint("created_at", { mode: "number" }).notNull(),
      updatedAt: bigint("updated_at", { mode: "number" }).notNull(),
      // Null: never expires. ttl_minutes is what a read that refreshes adds to its time.
      expiresAt: bigint("expires_at", { mode: "number" }),
      ttlMinutes: double("ttl_minutes"),
    },
    (t) => [
      primaryKey({ name: `${prefix}store_items_pk`, columns: [t.nsPath, t.key] }),
      index(`${prefix}store_items_expires_at_idx`).on(t.expiresAt),
    ],
  );
  return { storeItems };
}

/** The longest namespace path (labels joined by ".") and key, in UTF-8 bytes, the MySQL table holds. */
export const MYSQL_STORE_PATH_BYTES = 2000;
export const MYSQL_STORE_KEY_BYTES = 1000;

export type MySqlStoreTables = ReturnType<typeof storeTables>;

export const storeItems = storeTables().storeItems;
