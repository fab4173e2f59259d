import { createHash } from "node:crypto";
import { type Column, type SQL, sql, type Table } from "drizzle-orm";
import type { Dialect } from "../dialects/dialect.js";
import { CheckpointSaverError } from "../errors.js";
import { serializeMetadata } from "../saver/metadata.js";
import { requireId, toBuffer } from "../saver/values.js";
import { recordLine } from "./format.js";
import type { BlobRecord, CheckpointRecord, TransferRecord, WriteRecord } from "./records.js";
import { OurSource, STAGING_PREFIX } from "./sources/ours.js";

/** A target thread that already holds other content, and no `replace` was asked for. */
export class ThreadConflictError extends CheckpointSaverError {
  override name = "ThreadConflictError";
}

/** Rows per insert statement (well below every driver's parameter limit). */
const BATCH = 100;

export type ThreadOutcome = "imported" | "replaced" | "unchanged";

/**
 * Where a thread is written before it becomes visible: its rows go to a staging
 * thread id in batches (each a short transaction), then one transaction renames
 * them to the real id. A run killed half way leaves only staging rows, which the
 * next import of that thread removes first.
 */
export function stagingThreadId(threadId: string): string {
  return `${STAGING_PREFIX}${createHash("sha256").update(threadId).digest("hex")}`;
}

/** Writes threads into one of our databases through its dialect's `insert` and `atomically`. */
export class ThreadWriter {
  private checkpoints: CheckpointRecord[] = [];
  private blobs: BlobRecord[] = [];
  private writes: WriteRecord[] = [];
  private staging = "";

  constructor(private readonly dialect: Dialect) {}

  /** Staged rows go to these; the per-thread row is recomputed once a thread is in place. */
  private tables(): { table: Table; threadId: Column }[] {
    const { checkpoints, blobs, writes } = this.dialect.columns;
    return [checkpoints, blobs, writes];
  }

  private deleteThread(threadId: string): SQL[] {
    return this.tables().map(({ table, threadId: column }) => sql`delete from ${table} where ${column} = ${threadId}`);
  }

  /** Starts a thread: removes what an interrupted import of it left in staging. */
  async begin(threadId: string): Promise<void> {
    requireId(threadId, "thread_id");
    this.staging = stagingThreadId(threadId);
    this.checkpoints = [];
    this.blobs = [];
    this.writes = [];
    await this.dialect.atomically(this.deleteThread(this.staging));
  }

  async add(record: TransferRecord): Promise<void> {
    if (record.kind === "checkpoint") this.checkpoints.push(record);
    else if (record.kind === "blob") this.blobs.push(record);
    else this.writes.push(record);
    if (this.checkpoints.length + this.blobs.length + this.writes.length >= BATCH) await this.flush();
  }

  /** Makes the staged thread the real one, unless the real one exists with other content. */
  async finish(threadId: string, replace: boolean): Promise<ThreadOutcome> {
    await this.flush();
    const rename = this.tables().map(
      ({ table, threadId: column }) =>
        sql`update ${table} set ${sql.identifier(column.name)} = ${threadId} where ${column} = ${this.staging}`,
    );
    if (!(await this.exists(threadId))) {
      await this.dialect.atomically(rename);
      await this.dialect.refreshThread(threadId);
      return "imported";
    }
    if ((await this.digest(this.staging)) === (await this.digest(threadId))) {
      await this.abort();
      return "unchanged";
    }
    if (!replace) {
      await this.abort();
      throw new ThreadConflictError(
        `target thread "${threadId}" already exists with other content (replace it with --replace); nothing was written`,
      );
    }
    await this.dialect.atomically([...this.deleteThread(threadId), ...rename]);
    await this.dialect.refreshThread(threadId);
    return "replaced";
  }

  /** Removes the staged rows of the current thread. */
  async abort(): Promise<void> {
    this.checkpoints = [];
    this.blobs = [];
    this.writes = [];
    if (this.staging) await this.dialect.atomically(this.deleteThread(this.staging));
  }

  private async exists(threadId: string): Promise<boolean> {
    for (const { table, threadId: column } of this.tables()) {
      const rows = await this.dialect.query(sql`select 1 as found from ${table} where ${column} = ${threadId} limit 1`);
      if (rows.length > 0) return true;
    }
    return false;
  }

  /**
   * A digest of a thread's rows that does not depend on their order: the sum of the
   * SHA-256 of every row's line in the transfer format. Reads the thread page by page.
   */
  private async digest(threadId: string): Promise<string> {
    let sum = 0n;
    let rows = 0;
    for await (const record of new OurSource(this.dialect).thread(threadId)) {
      const line = recordLine(
        record.kind === "checkpoint" ? { ...record, metadata: canonical(record.metadata) } : record,
      );
      sum = (sum + BigInt(`0x${createHash("sha256").update(line).digest("hex")}`)) % 2n ** 256n;
      rows++;
    }
    return `${rows}:${sum.toString(16)}`;
  }

  private async flush(): Promise<void> {
    const statements: SQL[] = [];
    if (this.blobs.length > 0) statements.push(this.insertBlobs(this.blobs));
    if (this.checkpoints.length > 0) statements.push(this.insertCheckpoints(this.checkpoints));
    if (this.writes.length > 0) statements.push(this.insertWrites(this.writes));
    this.checkpoints = [];
    this.blobs = [];
    this.writes = [];
    if (statements.length > 0) await this.dialect.atomically(statements);
  }

  // Staged rows keep what is already there on a conflict: a repeated row has the same content.

  private insertBlobs(records: BlobRecord[]): SQL {
    const b = this.dialect.columns.blobs;
    return this.dialect.insert({
      table: b.table,
      columns: [b.threadId, b.checkpointNs, b.channel, b.version, b.type, b.blob, b.deltaChain],
      rows: records.map((r) => [
        this.staging,
        r.ns,
        r.channel,
        r.version,
        r.type,
        r.value && toBuffer(r.value),
        r.deltaChain ?? null,
      ]),
      conflictTarget: [b.threadId, b.checkpointNs, b.channel, b.version],
      update: [],
    });
  }

  private insertCheckpoints(records: CheckpointRecord[]): SQL {
    const c = this.dialect.columns.checkpoints;
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
        c.createdAt,
      ],
      rows: records.map((r) => [
        this.staging,
        r.ns,
        requireId(r.checkpointId, "checkpoint_id"),
        r.parentCheckpointId === null ? null : requireId(r.parentCheckpointId, "parent_checkpoint_id"),
        r.type,
        toBuffer(r.checkpoint),
        this.dialect.jsonParam(JSON.stringify(r.channelVersions)),
        this.dialect.jsonParam(serializeMetadata(r.metadata)),
        // The original time, which the saver's put would replace with now.
        this.dialect.epochMillis(r.createdAt),
      ]),
      conflictTarget: [c.threadId, c.checkpointNs, c.checkpointId],
      update: [],
    });
  }

  private insertWrites(records: WriteRecord[]): SQL {
    const w = this.dialect.columns.writes;
    return this.dialect.insert({
      table: w.table,
      columns: [w.threadId, w.checkpointNs, w.checkpointId, w.taskId, w.idx, w.channel, w.type, w.blob, w.taskPath],
      rows: records.map((r) => [
        this.staging,
        r.ns,
        requireId(r.checkpointId, "checkpoint_id"),
        requireId(r.taskId, "task_id"),
        r.idx,
        r.channel,
        r.type,
        r.value && toBuffer(r.value),
        r.taskPath,
      ]),
      conflictTarget: [w.threadId, w.checkpointNs, w.checkpointId, w.taskId, w.idx],
      update: [],
    });
  }
}

/** Metadata with sorted keys, as the target stores it, so a digest does not depend on key order. */
function canonical(value: Record<string, unknown>): Record<string, unknown> {
  return JSON.parse(serializeMetadata(value)) as Record<string, unknown>;
}
