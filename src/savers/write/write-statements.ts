/**
 * The statements of the write path (the thread row's upsert, the blob, checkpoint and
 * pending-write inserts, the parent check), each a template compiled once per shape.
 */
import { type Column, sql } from "drizzle-orm";
import type { BlobColumns, CheckpointColumns, Dialect, Precondition, WriteColumns } from "../../dialects/dialect.js";
import { MissingParentError } from "../../errors.js";
import { placeholderRows, rowChunks, rowValues, type Statement, type Templates } from "../../sql/statements.js";

/** The columns a checkpoint row is inserted with, in this order (the import writes them alike). */
export const checkpointRowColumns = (c: CheckpointColumns): Column[] => [
  c.threadId,
  c.checkpointNs,
  c.checkpointId,
  c.parentCheckpointId,
  c.checkpointType,
  c.checkpoint,
  c.channelVersions,
  c.metadata,
  c.createdAt,
];

/** The columns a blob row is inserted with, in this order. */
export const blobRowColumns = (b: BlobColumns): Column[] => [
  b.threadId,
  b.checkpointNs,
  b.channel,
  b.version,
  b.type,
  b.blob,
  b.deltaChain,
];

/** The columns a pending-write row is inserted with, in this order. */
export const writeRowColumns = (w: WriteColumns): Column[] => [
  w.threadId,
  w.checkpointNs,
  w.checkpointId,
  w.taskId,
  w.idx,
  w.channel,
  w.type,
  w.blob,
  w.taskPath,
];

/** The columns of a pending-write row, in the order of putWrites' rows. */
const WRITE_COLUMNS = 9;

/**
 * The statements of the write path, each a template compiled once per shape: the
 * thread row's upsert, blob, checkpoint and pending-write inserts, and the check that
 * a checkpoint still exists.
 */
export class WriteStatements {
  /** How many statements the dialect's thread-row upsert has (see threadRow). */
  private threadStatements?: number;

  constructor(
    private readonly dialect: Dialect,
    private readonly templates: Templates,
  ) {}

  /**
   * The upsert of the thread's row (see Dialect.threadPut), first in put's atomic unit:
   * it sees whether the checkpoint existed, and takes the row's lock before any other.
   */
  threadRow(threadId: string, ns: string, checkpointId: string, metadataJson: string): Statement[] {
    const placeholder = (name: string) => sql.placeholder(`thread.${name}`);
    const build = () =>
      this.dialect.threadPut({
        threadId: placeholder("id"),
        nsKey: placeholder("ns"),
        checkpointId: placeholder("checkpoint"),
        rootCount: placeholder("root"),
        latestCheckpointId: placeholder("latest"),
        metadata: placeholder("metadata"),
      });
    const root = ns === "";
    const values = {
      "thread.id": threadId,
      "thread.ns": this.dialect.nsKey(ns),
      "thread.checkpoint": checkpointId,
      "thread.root": root ? 1 : 0,
      "thread.latest": root ? checkpointId : null,
      "thread.metadata": root ? metadataJson : null,
    };
    this.threadStatements ??= build().length;
    return Array.from({ length: this.threadStatements }, (_, k) =>
      this.templates.statement(`put.thread.${k}`, () => build()[k], values),
    );
  }

  /**
   * Inserts of a put's blob rows (thread, namespace, channel, version, type, blob,
   * delta chain), in chunks under the parameter limits. Versions are unique per branch,
   * so an existing row already holds its value. Without deltas the rows go without
   * `delta_chain`: the statement of the schema before it, so a saver not storing deltas
   * (incrementalValues: 0) still writes to tables not yet migrated.
   */
  blobInserts(rows: unknown[][], withDeltas: boolean): Statement[] {
    if (rows.length === 0) return [];
    const b = this.dialect.columns.blobs;
    const width = withDeltas ? 7 : 6;
    const columns = blobRowColumns(b).slice(0, width);
    return rowChunks(rows, width, this.dialect.executor.limits).map((chunk, k) => {
      // Placeholder names differ between chunks: the PostgreSQL dialect may join them into one statement.
      const prefix = k === 0 ? "blob" : `blob${k}_`;
      const chunkRows = chunk.map((row) => row.slice(0, width));
      const build = () =>
        this.dialect.insert({
          table: b.table,
          columns,
          rows: placeholderRows(prefix, chunkRows.length, width),
          conflictTarget: [b.threadId, b.checkpointNs, b.channel, b.version],
          update: [],
        });
      return this.templates.statement(
        `put.${prefix}s.${chunkRows.length}.${width}`,
        build,
        rowValues(prefix, chunkRows),
      );
    });
  }

  /** The upsert of a checkpoint row: thread, namespace, id, parent id, type, bytes, versions and metadata JSON. */
  checkpointUpsert(row: unknown[]): Statement {
    const c = this.dialect.columns.checkpoints;
    const build = () => {
      const [[thread, namespace, id, parent, type, data, versions, meta]] = placeholderRows("checkpoint", 1, 8);
      return this.dialect.insert({
        table: c.table,
        columns: checkpointRowColumns(c),
        rows: [
          [
            thread,
            namespace,
            id,
            parent,
            type,
            data,
            this.dialect.jsonParam(versions),
            this.dialect.jsonParam(meta),
            this.dialect.putTime(thread),
          ],
        ],
        conflictTarget: [c.threadId, c.checkpointNs, c.checkpointId],
        update: [c.parentCheckpointId, c.checkpointType, c.checkpoint, c.channelVersions, c.metadata],
      });
    };
    return this.templates.statement("put.checkpoint", build, rowValues("checkpoint", [row]));
  }

  /**
   * Inserts of a task's pending writes. Special channels (errors, interrupts, resumes)
   * replace what the task wrote before; a regular write is recorded once, so a retried
   * task cannot change a stored result.
   */
  writeInserts(special: unknown[][], regular: unknown[][]): Statement[] {
    const w = this.dialect.columns.writes;
    const insert = (kind: string, rows: unknown[][], update: Column[]) =>
      this.templates.statement(
        `putWrites.${kind}.${rows.length}`,
        () =>
          this.dialect.insert({
            table: w.table,
            columns: writeRowColumns(w),
            rows: placeholderRows(kind, rows.length, WRITE_COLUMNS),
            conflictTarget: [w.threadId, w.checkpointNs, w.checkpointId, w.taskId, w.idx],
            update,
          }),
        rowValues(kind, rows),
      );
    const statements: Statement[] = [];
    if (special.length > 0) statements.push(insert("special", special, [w.channel, w.type, w.blob, w.taskPath]));
    const regularChunks = rowChunks(regular, WRITE_COLUMNS, this.dialect.executor.limits);
    // Placeholder names differ between chunks: the PostgreSQL dialect may join them into one statement.
    for (const [k, rows] of regularChunks.entries())
      statements.push(insert(k === 0 ? "regular" : `regular${k}_`, rows, []));
    return statements;
  }

  /** A precondition that the checkpoint exists, failing with a MissingParentError naming `what`. */
  checkpointExists(threadId: string, ns: string, checkpointId: string, what: string): Precondition {
    const c = this.dialect.columns.checkpoints;
    const rows = () =>
      sql`select 1 from ${c.table} where ${c.threadId} = ${sql.placeholder("parent.thread")} and ${c.nsKey} = ${sql.placeholder("parent.ns")} and ${c.checkpointId} = ${sql.placeholder("parent.id")}`;
    return {
      rows: this.templates.statement("put.parent", rows, {
        "parent.thread": threadId,
        "parent.ns": this.dialect.nsKey(ns),
        "parent.id": checkpointId,
      }),
      failure: () =>
        new MissingParentError(
          `${what} of thread "${threadId}" no longer exists (the thread was deleted or pruned meanwhile); nothing was written`,
        ),
    };
  }
}
