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
function after(columns: (Column | SQL)[], values: unknown[]): SQL {
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
    const columns = { checkpoint_ns: c.checkpointNs, ns_key: c.nsKey, checkpoint_id: c.checkpointId };
    let found = 0;
    for await (const row of this.pages(threadId, c, columns, ["ns_key", "checkpoint_id"])) {
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

  /**
   * Pages of a table's rows of one thread: `columns` selected, each under its key, in the
   * order of the keys `order` names among them, each next page after the last row's key.
   */
  private async *pages<Columns extends Record<string, Column | SQL>>(
    threadId: string,
    table: { table: SQL | object; threadId: Column },
    columns: Columns,
    order: (keyof Columns & string)[],
  ): AsyncGenerator<Row> {
    const select = sql.join(
      Object.entries(columns).map(([key, column]) => sql`${column} as ${sql.identifier(key)}`),
      sql`, `,
    );
    const orderBy = order.map((key) => columns[key]);
    let cursor: unknown[] | undefined;
    for (;;) {
      const conditions = [sql`${table.threadId} = ${threadId}`];
      if (cursor) conditions.push(after(orderBy, cursor));
      const rows =
        await this.dialect.query(sql`select ${select} from ${table.table} where ${sql.join(conditions, sql` and `)}
        order by ${sql.join(orderBy, sql`, `)} limit ${sql.raw(String(PAGE))}`);
      yield* rows;
      if (rows.length < PAGE) return;
      const last = rows[rows.length - 1];
      cursor = order.map((key) => last[key]);
    }
  }

  private async *checkpoints(threadId: string): AsyncGenerator<CheckpointRecord> {
    const c = this.dialect.columns.checkpoints;
    const columns = {
      checkpoint_ns: c.checkpointNs,
      // "ns_key": MySQL's dialect leaves bytes in this column (its hash), which the next page compares with.
      ns_key: c.nsKey,
      checkpoint_id: c.checkpointId,
      parent_checkpoint_id: c.parentCheckpointId,
      checkpoint_type: c.checkpointType,
      checkpoint: c.checkpoint,
      channel_versions: c.channelVersions,
      metadata: c.metadata,
      created_at: this.dialect.createdAtMillis(sql`${c.createdAt}`),
    };
    for await (const row of this.pages(threadId, c, columns, ["ns_key", "checkpoint_id"])) {
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
    const columns = {
      checkpoint_ns: b.checkpointNs,
      ns_key: b.nsKey,
      channel: b.channel,
      version: b.version,
      type: b.type,
      blob: b.blob,
      delta_chain: b.deltaChain,
    };
    for await (const row of this.pages(threadId, b, columns, ["ns_key", "channel", "version"])) {
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
    const columns = {
      checkpoint_ns: w.checkpointNs,
      ns_key: w.nsKey,
      checkpoint_id: w.checkpointId,
      task_id: w.taskId,
      idx: w.idx,
      channel: w.channel,
      type: w.type,
      blob: w.blob,
      task_path: w.taskPath,
    };
    for await (const row of this.pages(threadId, w, columns, ["ns_key", "checkpoint_id", "task_id", "idx"])) {
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
