/**
 * The rows an import stages (see target.ts): one batch's inserts under the staging
 * thread id, sized to the target driver's limits, and the measures a batch is bounded by.
 */
import type { SQL } from "drizzle-orm";
import type { Dialect, InsertSpec } from "../dialects/dialect.js";
import { serializeMetadata } from "../savers/values/metadata.js";
import { requireId, toBuffer } from "../savers/values/values.js";
import { blobRowColumns, checkpointRowColumns, writeRowColumns } from "../savers/write/write-statements.js";
import { parameterLimit } from "../sql/executor.js";
import { inPieces } from "../sql/statements.js";
import type { BlobRecord, CheckpointRecord, TransferRecord, WriteRecord } from "./records.js";

/**
 * Rows held per batch, and per insert statement where the driver has no limits of its
 * own (well below every database's parameter limit); on a driver with limits (D1: 100
 * parameters) a batch's rows go in as many statements as those limits need.
 */
export const BATCH = 100;

/**
 * Bytes of values per batch: rows are held until they are written, and a hundred
 * rows of several megabytes each would hold hundreds of megabytes (and make a
 * statement MySQL refuses). A row larger than this is written alone.
 */
export const BATCH_BYTES = 4 * 1024 * 1024;

/** About how many bytes a record holds: its values and ids (metadata counted by its JSON text). */
export function recordBytes(record: TransferRecord): number {
  const ids = record.ns.length + ("checkpointId" in record ? record.checkpointId.length : 0);
  if (record.kind === "checkpoint") {
    return ids + record.checkpoint.byteLength + JSON.stringify(record.metadata).length;
  }
  return ids + record.channel.length + (record.value?.byteLength ?? 0);
}

/** Metadata with sorted keys, as the target stores it, so a digest does not depend on key order. */
export function canonical(value: Record<string, unknown>): Record<string, unknown> {
  return JSON.parse(serializeMetadata(value)) as Record<string, unknown>;
}

/** A batch of rows to write under the staging id `staging`. */
export interface StagedBatch {
  checkpoints: CheckpointRecord[];
  blobs: BlobRecord[];
  writes: WriteRecord[];
}

/**
 * The inserts of a batch: one per table, or, on a driver with a parameter limit (D1),
 * as many as keep each within it, so that every value stays a bound parameter. Staged
 * rows keep what is already there on a conflict: a repeated row has the same content.
 */
export function stagedInserts(dialect: Dialect, staging: string, batch: StagedBatch): SQL[] {
  const { blobs: b, checkpoints: c, writes: w } = dialect.columns;
  const inserts = (spec: Omit<InsertSpec, "update">): SQL[] => {
    const limit = parameterLimit(dialect.executor.limits);
    const size = Math.min(BATCH, Math.max(1, Math.floor(limit / spec.columns.length)));
    return inPieces(spec.rows, size).map((rows) => dialect.insert({ ...spec, rows, update: [] }));
  };
  return [
    ...inserts({
      table: b.table,
      columns: blobRowColumns(b),
      rows: batch.blobs.map((r) => blobRow(staging, r)),
      conflictTarget: [b.threadId, b.checkpointNs, b.channel, b.version],
    }),
    ...inserts({
      table: c.table,
      columns: checkpointRowColumns(c),
      rows: batch.checkpoints.map((r) => checkpointRow(dialect, staging, r)),
      conflictTarget: [c.threadId, c.checkpointNs, c.checkpointId],
    }),
    ...inserts({
      table: w.table,
      columns: writeRowColumns(w),
      rows: batch.writes.map((r) => writeRow(staging, r)),
      conflictTarget: [w.threadId, w.checkpointNs, w.checkpointId, w.taskId, w.idx],
    }),
  ];
}

/** A blob record's values, in the order of `blobRowColumns`. */
function blobRow(staging: string, r: BlobRecord): unknown[] {
  return [staging, r.ns, r.channel, r.version, r.type, r.value && toBuffer(r.value), r.deltaChain ?? null];
}

/** A checkpoint record's values, in the order of `checkpointRowColumns`. */
function checkpointRow(dialect: Dialect, staging: string, r: CheckpointRecord): unknown[] {
  return [
    staging,
    r.ns,
    requireId(r.checkpointId, "checkpoint_id"),
    r.parentCheckpointId === null ? null : requireId(r.parentCheckpointId, "parent_checkpoint_id"),
    r.type,
    toBuffer(r.checkpoint),
    dialect.jsonParam(JSON.stringify(r.channelVersions)),
    dialect.jsonParam(serializeMetadata(r.metadata, dialect.maxJsonDepth)),
    // The original time, which the saver's put would replace with now.
    dialect.epochMillis(r.createdAt),
  ];
}

/** A pending write record's values, in the order of `writeRowColumns`. */
function writeRow(staging: string, r: WriteRecord): unknown[] {
  return [
    staging,
    r.ns,
    requireId(r.checkpointId, "checkpoint_id"),
    requireId(r.taskId, "task_id"),
    r.idx,
    r.channel,
    r.type,
    r.value && toBuffer(r.value),
    r.taskPath,
  ];
}
