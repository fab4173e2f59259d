/**
 * Our own tables as a source: each thread's checkpoints, values and writes read and re-checked so a thread is
 * exported whole or not at all.
 */
import { type Column, type SQL, sql } from "drizzle-orm";
import type { Dialect, Row } from "../../dialects/dialect.js";
import { ThreadChangedError } from "../../errors.js";
import { parseMetadata, storedFilterEntries } from "../../savers/values/metadata.js";
import { notStaging, requireThreadId } from "../../savers/values/reserved.js";
import { as, asBytes, parseJsonColumn, tupleKey } from "../../savers/values/values.js";
import { valueList } from "../../sql/statements.js";
import {
  type BlobRecord,
  type CheckpointRecord,
  selectedThreads,
  type ThreadSelection,
  type ThreadStream,
  type TransferRecord,
  type TransferSource,
  type WriteRecord,
} from "../records.js";

/** Rows per page of one thread's checkpoints, blobs or writes. */
const PAGE = 200;

/** `(a, b) > (x, y)`: row-value comparison, which PostgreSQL, MySQL, MariaDB and SQLite all have. */
function after(columns: Column[], values: unknown[]): SQL {
  return sql`(${sql.join(columns, sql`, `)}) > (${valueList(values)})`;
}

/** An incremental value's chain, exported as stored so the thread's rows stay consistent. */
const deltaChainOf = (column: unknown): { deltaChain?: string } =>
  column === null || column === undefined
    ? {}
    : { deltaChain: typeof column === "string" ? column : Buffer.from(asBytes(column)).toString("utf8") };

const nullableBytes = (value: unknown) => (value === null || value === undefined ? null : asBytes(value));

/**
 * One of our databases as a source. Rows are copied as stored (the bytes are never
 * decoded), a thread page by page in key order, so memory stays bounded by the page.
 */
export class OurSource implements TransferSource {
  readonly description: string;

  constructor(
    private readonly dialect: Dialect,
    private readonly selection: ThreadSelection = {},
    private readonly onClose: () => Promise<void> = async () => {},
  ) {
    this.description = `ours (${dialect.name})`;
  }

  private threadCondition(): SQL[] {
    const entries = storedFilterEntries(this.selection.filter);
    // Rows an interrupted import left behind are not a thread (see target.ts).
    const notStaged = notStaging(this.dialect.columns.checkpoints.threadId);
    return entries.length > 0 ? [notStaged, this.dialect.metadataMatches(entries)] : [notStaged];
  }

  async countThreads(): Promise<number> {
    if (this.selection.threadIds) return new Set(this.selection.threadIds).size;
    const c = this.dialect.columns.checkpoints;
    const where = sql` where ${sql.join(this.threadCondition(), sql` and `)}`;
    const [row] = await this.dialect.query(
      sql`select count(distinct ${c.threadId}) as ${sql.identifier("n")} from ${c.table}${where}`,
    );
    return Number(row.n);
  }

  async *threads(): AsyncGenerator<ThreadStream> {
    const c = this.dialect.columns.checkpoints;
    const ids = selectedThreads(this.selection, async (cursor, limit) => {
      const conditions = [sql`${c.threadId} > ${cursor}`, ...this.threadCondition()];
      const rows = await this.dialect.query(
        sql`select distinct ${as(c.threadId, "thread_id")} from ${c.table} where ${sql.join(conditions, sql` and `)}
            order by ${sql.identifier("thread_id")} limit ${sql.raw(String(limit))}`,
      );
      return rows.map((row) => row.thread_id as string);
    });
    for await (const threadId of ids) yield { threadId, records: this.named(threadId) };
  }

  /**
   * A thread's rows, read in pages with no snapshot across them; then a check that every
   * checkpoint read is still there. A prune, sweep or delete that removed some meanwhile
   * may have taken their values before the blobs were read: the thread then fails
   * (ThreadChangedError), so what is exported is the thread as it was or nothing. A
   * staging id named by the caller fails that thread (InvalidInputError).
   */
  private async *named(threadId: string): AsyncGenerator<TransferRecord> {
    requireThreadId(threadId);
    const read = new Set<string>();
    for await (const record of this.thread(threadId)) {
      if (record.kind === "checkpoint") read.add(tupleKey([record.ns, record.checkpointId]));
      yield record;
    }
    await this.requireStillThere(threadId, read);
  }

  /** Throws ThreadChangedError unless every checkpoint in `read` (keys by tupleKey) is still stored. */
  private async requireStillThere(threadId: string, read: Set<string>): Promise<void> {
    const c = this.dialect.columns.checkpoints;
    const select = sql.join(
      [as(c.checkpointNs, "checkpoint_ns"), as(c.nsKey, "ns_key"), as(c.checkpointId, "checkpoint_id")],
      sql`, `,
    );
    const order = [
      { column: c.nsKey, key: "ns_key" },
      { column: c.checkpointId, key: "checkpoint_id" },
    ];
    let found = 0;
    for await (const row of this.pages(threadId, c, select, order)) {
      if (read.has(tupleKey([row.checkpoint_ns, row.checkpoint_id]))) found++;
    }
    if (found < read.size) {
      throw new ThreadChangedError(
        `thread "${threadId}" changed while it was read: ${read.size - found} of its ${read.size} checkpoints were removed meanwhile (a prune, sweep or delete); nothing of it is exported, export it again`,
      );
    }
  }

  /** Every row of a thread: checkpoints, then blobs, then writes. */
  async *thread(threadId: string): AsyncGenerator<TransferRecord> {
    yield* this.checkpoints(threadId);
    yield* this.blobs(threadId);
    yield* this.writes(threadId);
  }

  /** Pages of a table's rows of one thread in `order`, each next page after the last row's key. */
  private async *pages(
    threadId: string,
    table: { table: SQL | object; threadId: Column },
    select: SQL,
    order: { column: Column; key: string }[],
  ): AsyncGenerator<Row> {
    let cursor: unknown[] | undefined;
    for (;;) {
      const conditions = [sql`${table.threadId} = ${threadId}`];
      if (cursor)
        conditions.push(
          after(
            order.map((o) => o.column),
            cursor,
          ),
        );
      const rows =
        await this.dialect.query(sql`select ${select} from ${table.table} where ${sql.join(conditions, sql` and `)}
        order by ${sql.join(
          order.map((o) => o.column),
          sql`, `,
        )} limit ${sql.raw(String(PAGE))}`);
      yield* rows;
      if (rows.length < PAGE) return;
      const last = rows[rows.length - 1];
      cursor = order.map((o) => last[o.key]);
    }
  }

  private async *checkpoints(threadId: string): AsyncGenerator<CheckpointRecord> {
    const c = this.dialect.columns.checkpoints;
    const select = sql.join(
      [
        as(c.checkpointNs, "checkpoint_ns"),
        // "ns_key": MySQL's dialect leaves bytes in this column (its hash), which the next page compares with.
        as(c.nsKey, "ns_key"),
        as(c.checkpointId, "checkpoint_id"),
        as(c.parentCheckpointId, "parent_checkpoint_id"),
        as(c.checkpointType, "checkpoint_type"),
        as(c.checkpoint, "checkpoint"),
        as(c.channelVersions, "channel_versions"),
        as(c.metadata, "metadata"),
        sql`${this.dialect.createdAtMillis(sql`${c.createdAt}`)} as ${sql.identifier("created_at")}`,
      ],
      sql`, `,
    );
    const order = [
      { column: c.nsKey, key: "ns_key" },
      { column: c.checkpointId, key: "checkpoint_id" },
    ];
    for await (const row of this.pages(threadId, c, select, order)) {
      yield {
        kind: "checkpoint",
        ns: row.checkpoint_ns as string,
        checkpointId: row.checkpoint_id as string,
        parentCheckpointId: (row.parent_checkpoint_id as string | null) ?? null,
        createdAt: Number(row.created_at),
        type: row.checkpoint_type as string,
        checkpoint: asBytes(row.checkpoint),
        channelVersions: parseJsonColumn(row.channel_versions) as Record<string, string>,
        metadata: parseMetadata(row.metadata),
      };
    }
  }

  private async *blobs(threadId: string): AsyncGenerator<BlobRecord> {
    const b = this.dialect.columns.blobs;
    const select = sql.join(
      [
        as(b.checkpointNs, "checkpoint_ns"),
        as(b.nsKey, "ns_key"),
        as(b.channel, "channel"),
        as(b.version, "version"),
        as(b.type, "type"),
        as(b.blob, "blob"),
        as(b.deltaChain, "delta_chain"),
      ],
      sql`, `,
    );
    const order = [
      { column: b.nsKey, key: "ns_key" },
      { column: b.channel, key: "channel" },
      { column: b.version, key: "version" },
    ];
    for await (const row of this.pages(threadId, b, select, order)) {
      yield {
        kind: "blob",
        ns: row.checkpoint_ns as string,
        channel: row.channel as string,
        version: row.version as string,
        type: row.type as string,
        value: nullableBytes(row.blob),
        ...deltaChainOf(row.delta_chain),
      };
    }
  }

  private async *writes(threadId: string): AsyncGenerator<WriteRecord> {
    const w = this.dialect.columns.writes;
    const select = sql.join(
      [
        as(w.checkpointNs, "checkpoint_ns"),
        as(w.nsKey, "ns_key"),
        as(w.checkpointId, "checkpoint_id"),
        as(w.taskId, "task_id"),
        as(w.idx, "idx"),
        as(w.channel, "channel"),
        as(w.type, "type"),
        as(w.blob, "blob"),
        as(w.taskPath, "task_path"),
      ],
      sql`, `,
    );
    const order = [
      { column: w.nsKey, key: "ns_key" },
      { column: w.checkpointId, key: "checkpoint_id" },
      { column: w.taskId, key: "task_id" },
      { column: w.idx, key: "idx" },
    ];
    for await (const row of this.pages(threadId, w, select, order)) {
      yield {
        kind: "write",
        ns: row.checkpoint_ns as string,
        checkpointId: row.checkpoint_id as string,
        taskId: row.task_id as string,
        idx: Number(row.idx),
        channel: row.channel as string,
        type: row.type as string,
        value: nullableBytes(row.blob),
        taskPath: (row.task_path as string | null) ?? "",
      };
    }
  }

  async close(): Promise<void> {
    await this.onClose();
  }
}
