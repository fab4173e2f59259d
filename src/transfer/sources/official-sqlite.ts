/**
 * LangGraph's official SQLite saver as a source: reads its file page by page and converts each thread to our
 * records.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import type { Database } from "better-sqlite3";
import { InvalidInputError } from "../../errors.js";
import {
  selectedThreads,
  type ThreadSelection,
  type ThreadStream,
  type TransferRecord,
  type TransferSource,
} from "../records.js";
import { type OfficialCheckpoint, toOurVersion, valueSuffix } from "../versions.js";
import { decodeOfficial, encodeOurs, rowName, toCheckpointRecord, toWriteRecord } from "./official.js";

const PAGE = 200;
/** Blob keys remembered per thread to skip repeats; a repeat beyond it is written again, harmlessly. */
const SEEN_BLOBS = 20_000;

interface CheckpointRow {
  checkpoint_ns: string;
  checkpoint_id: string;
  parent_checkpoint_id: string | null;
  type: string | null;
  checkpoint: Uint8Array | string;
  metadata: Uint8Array | string;
}

interface WriteRow {
  checkpoint_ns: string;
  checkpoint_id: string;
  task_id: string;
  idx: number;
  channel: string;
  type: string | null;
  value: Uint8Array | string | null;
}

/**
 * The file of `@langchain/langgraph-checkpoint-sqlite` as a source. That saver keeps
 * every channel value inside every checkpoint; here each value becomes a blob, its
 * version suffixed by the value's digest (see versions.ts), so checkpoints that share
 * a value share one blob, and two branches that reuse an integer version do not clash.
 */
export class OfficialSqliteSource implements TransferSource {
  readonly description = "official-sqlite";

  constructor(
    private readonly db: Database,
    private readonly official: SerializerProtocol,
    private readonly ours: SerializerProtocol,
    private readonly selection: ThreadSelection = {},
  ) {
    if (selection.filter && Object.keys(selection.filter).length > 0) {
      throw new InvalidInputError("a metadata filter is not supported on the official SQLite saver's file");
    }
  }

  async countThreads(): Promise<number> {
    if (this.selection.threadIds) return new Set(this.selection.threadIds).size;
    const row = this.db.prepare("select count(distinct thread_id) as n from checkpoints").get() as { n: number };
    return row.n;
  }

  async *threads(): AsyncGenerator<ThreadStream> {
    const page = this.db.prepare(
      "select distinct thread_id from checkpoints where thread_id > ? order by thread_id limit ?",
    );
    const ids = selectedThreads(this.selection, async (cursor, limit) =>
      (page.all(cursor, limit) as { thread_id: string }[]).map((row) => row.thread_id),
    );
    for await (const threadId of ids) yield { threadId, records: this.thread(threadId) };
  }

  private async *thread(threadId: string): AsyncGenerator<TransferRecord> {
    const page = this.db.prepare(`select checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata
      from checkpoints where thread_id = ? and (checkpoint_ns, checkpoint_id) > (?, ?)
      order by checkpoint_ns, checkpoint_id limit ${PAGE}`);
    const seen = new Set<string>();
    let cursor = ["", ""];
    let first = true;
    for (;;) {
      const rows = (
        first
          ? this.db
              .prepare(`select checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata
                from checkpoints where thread_id = ? order by checkpoint_ns, checkpoint_id limit ${PAGE}`)
              .all(threadId)
          : page.all(threadId, cursor[0], cursor[1])
      ) as CheckpointRow[];
      first = false;
      for (const row of rows) yield* this.checkpoint(threadId, row, seen);
      if (rows.length < PAGE) break;
      cursor = [rows[rows.length - 1].checkpoint_ns, rows[rows.length - 1].checkpoint_id];
    }
    yield* this.writes(threadId);
  }

  /** One checkpoint row: its channel values as blobs first, then the checkpoint. */
  private async *checkpoint(threadId: string, row: CheckpointRow, seen: Set<string>): AsyncGenerator<TransferRecord> {
    const key = { threadId, ns: row.checkpoint_ns, checkpointId: row.checkpoint_id };
    const where = rowName("checkpoints", key);
    const checkpoint = (await decodeOfficial(this.official, row.type, row.checkpoint, where)) as OfficialCheckpoint;
    if (checkpoint === null || typeof checkpoint !== "object") {
      throw new InvalidInputError(`${where}: the checkpoint is not an object`);
    }
    const metadata = await decodeOfficial(this.official, row.type, row.metadata, `${where} (metadata)`);
    const values = (checkpoint.channel_values ?? {}) as Record<string, unknown>;
    const versions = checkpoint.channel_versions ?? {};
    const suffixes = new Map<string, string>();
    // Values of channels without a version are left out: such a channel was never written on
    // this branch, its value is the default LangGraph re-creates from the graph (the official
    // PostgreSQL saver does not store them either).
    for (const [channel, version] of Object.entries(versions)) {
      const hasValue = Object.hasOwn(values, channel);
      const [type, bytes] = hasValue
        ? await encodeOurs(this.ours, values[channel], `${where}, channel "${channel}"`)
        : ["empty", null];
      const suffix = valueSuffix(type, bytes);
      suffixes.set(channel, suffix);
      const ourVersion = toOurVersion(version, suffix, where);
      const blobKey = JSON.stringify([row.checkpoint_ns, channel, ourVersion]);
      if (seen.has(blobKey)) continue;
      if (seen.size >= SEEN_BLOBS) seen.clear();
      seen.add(blobKey);
      yield { kind: "blob", ns: row.checkpoint_ns, channel, version: ourVersion, type, value: bytes };
    }
    yield await toCheckpointRecord(
      this.ours,
      {
        ...key,
        parentCheckpointId: row.parent_checkpoint_id ?? null,
        checkpoint,
        metadata,
      },
      (channel) => suffixes.get(channel) ?? "0".repeat(16),
      where,
    );
  }

  private async *writes(threadId: string): AsyncGenerator<TransferRecord> {
    const columns = "checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value";
    const firstPage = this.db.prepare(
      `select ${columns} from writes where thread_id = ? order by checkpoint_ns, checkpoint_id, task_id, idx limit ${PAGE}`,
    );
    const nextPage = this.db.prepare(`select ${columns} from writes where thread_id = ?
      and (checkpoint_ns, checkpoint_id, task_id, idx) > (?, ?, ?, ?)
      order by checkpoint_ns, checkpoint_id, task_id, idx limit ${PAGE}`);
    let last: WriteRow | undefined;
    for (;;) {
      const rows = (
        last
          ? nextPage.all(threadId, last.checkpoint_ns, last.checkpoint_id, last.task_id, last.idx)
          : firstPage.all(threadId)
      ) as WriteRow[];
      for (const row of rows)
        yield await toWriteRecord({ official: this.official, ours: this.ours }, "writes", threadId, row, row.value);
      if (rows.length < PAGE) return;
      last = rows[rows.length - 1];
    }
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
