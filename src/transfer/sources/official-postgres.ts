/**
 * LangGraph's official PostgreSQL saver as a source: reads its tables page by page and converts each thread to our
 * records.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { Sql } from "postgres";
import {
  type BlobRecord,
  selectedThreads,
  type ThreadSelection,
  type ThreadStream,
  type TransferRecord,
  type TransferSource,
  type WriteRecord,
} from "../records.js";
import { toOurVersion, ZERO_SUFFIX } from "../versions.js";
import {
  decodeOfficial,
  encodeOurs,
  type OfficialRow,
  type OfficialWriteRow,
  rowName,
  toCheckpointRecord,
  toWriteRecord,
} from "./official.js";

const PAGE = 200;

/**
 * The tables of `@langchain/langgraph-checkpoint-postgres` (in its `schema`, "public"
 * by default) as a source. That saver stores each channel value once per integer
 * version, so a version maps to one value and keeps a zero suffix. Read page by page.
 */
export class OfficialPostgresSource implements TransferSource {
  readonly description: string;

  constructor(
    private readonly sql: Sql,
    private readonly schema: string,
    private readonly official: SerializerProtocol,
    private readonly ours: SerializerProtocol,
    private readonly selection: ThreadSelection = {},
  ) {
    this.description = `official-postgres (schema "${schema}")`;
  }

  private table(name: string) {
    return this.sql`${this.sql(this.schema)}.${this.sql(name)}`;
  }

  private filter() {
    const { filter } = this.selection;
    // The official saver's own filter: JSON containment.
    return filter && Object.keys(filter).length > 0
      ? this.sql`and metadata @> ${this.sql.json(filter as never)}`
      : this.sql``;
  }

  async countThreads(): Promise<number> {
    if (this.selection.threadIds) return new Set(this.selection.threadIds).size;
    const [row] = await this.sql`select count(distinct thread_id)::int as n from ${this.table("checkpoints")}
      where true ${this.filter()}`;
    return Number(row.n);
  }

  async *threads(): AsyncGenerator<ThreadStream> {
    const ids = selectedThreads(this.selection, async (cursor, limit) => {
      const rows = await this.sql`select distinct thread_id from ${this.table("checkpoints")}
        where thread_id > ${cursor} ${this.filter()} order by thread_id limit ${limit}`;
      return rows.map((row) => row.thread_id as string);
    });
    for await (const threadId of ids) yield { threadId, records: this.thread(threadId) };
  }

  private async *thread(threadId: string): AsyncGenerator<TransferRecord> {
    let cursor: [string, string] = ["", ""];
    for (let first = true; ; first = false) {
      const rows = await this.sql`select checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata
        from ${this.table("checkpoints")} where thread_id = ${threadId}
        ${first ? this.sql`` : this.sql`and (checkpoint_ns, checkpoint_id) > (${cursor[0]}, ${cursor[1]})`}
        order by checkpoint_ns, checkpoint_id limit ${PAGE}`;
      for (const raw of rows) {
        const row: OfficialRow = {
          threadId,
          ns: raw.checkpoint_ns,
          checkpointId: raw.checkpoint_id,
          parentCheckpointId: raw.parent_checkpoint_id ?? null,
          checkpoint: raw.checkpoint,
          metadata: undefined,
        };
        const where = rowName("checkpoints", row);
        // As the official saver reads its metadata: through its serializer, so serialized objects revive.
        const [type, bytes] = await this.official.dumpsTyped(raw.metadata);
        row.metadata = await decodeOfficial(this.official, type, bytes, where);
        yield await toCheckpointRecord(this.ours, row, () => ZERO_SUFFIX, where);
      }
      if (rows.length < PAGE) break;
      cursor = [rows[rows.length - 1].checkpoint_ns, rows[rows.length - 1].checkpoint_id];
    }
    yield* this.blobs(threadId);
    yield* this.writes(threadId);
  }

  private async *blobs(threadId: string): AsyncGenerator<BlobRecord> {
    let cursor: string[] | undefined;
    for (;;) {
      const rows = await this.sql`select checkpoint_ns, channel, version, type, blob
        from ${this.table("checkpoint_blobs")} where thread_id = ${threadId}
        ${cursor ? this.sql`and (checkpoint_ns, channel, version) > (${cursor[0]}, ${cursor[1]}, ${cursor[2]})` : this.sql``}
        order by checkpoint_ns, channel, version limit ${PAGE}`;
      for (const row of rows) {
        const where = `checkpoint_blobs row (thread_id "${threadId}", checkpoint_ns "${row.checkpoint_ns}", channel "${row.channel}", version "${row.version}")`;
        const version = toOurVersion(row.version, ZERO_SUFFIX, where);
        if (row.type === "empty") {
          yield { kind: "blob", ns: row.checkpoint_ns, channel: row.channel, version, type: "empty", value: null };
          continue;
        }
        const value = await decodeOfficial(this.official, row.type, row.blob, where);
        const [type, bytes] = await encodeOurs(this.ours, value, where);
        yield { kind: "blob", ns: row.checkpoint_ns, channel: row.channel, version, type, value: bytes };
      }
      if (rows.length < PAGE) return;
      const last = rows[rows.length - 1];
      cursor = [last.checkpoint_ns, last.channel, last.version];
    }
  }

  private async *writes(threadId: string): AsyncGenerator<WriteRecord> {
    let cursor: [string, string, string, number] | undefined;
    for (;;) {
      const rows = await this.sql`select checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob
        from ${this.table("checkpoint_writes")} where thread_id = ${threadId}
        ${cursor ? this.sql`and (checkpoint_ns, checkpoint_id, task_id, idx) > (${cursor[0]}, ${cursor[1]}, ${cursor[2]}, ${cursor[3]})` : this.sql``}
        order by checkpoint_ns, checkpoint_id, task_id, idx limit ${PAGE}`;
      for (const row of rows)
        yield await toWriteRecord(
          { official: this.official, ours: this.ours },
          "checkpoint_writes",
          threadId,
          row as unknown as OfficialWriteRow,
          row.blob,
        );
      if (rows.length < PAGE) return;
      const last = rows[rows.length - 1];
      cursor = [last.checkpoint_ns, last.checkpoint_id, last.task_id, Number(last.idx)];
    }
  }

  async close(): Promise<void> {
    await this.sql.end({ timeout: 5 });
  }
}
