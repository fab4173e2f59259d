/**
 * What moves between databases: the rows of our three tables for one thread, in the
 * form the target stores them (values as our serializer wrote them). Every source
 * turns its rows into these records; the target and the file format take them as is.
 */

export interface CheckpointRecord {
  kind: "checkpoint";
  ns: string;
  checkpointId: string;
  parentCheckpointId: string | null;
  /** Milliseconds since the epoch. */
  createdAt: number;
  /** Serializer type of `checkpoint` (the checkpoint without its channel values). */
  type: string;
  checkpoint: Uint8Array;
  channelVersions: Record<string, string | number>;
  metadata: Record<string, unknown>;
}

export interface BlobRecord {
  kind: "blob";
  ns: string;
  channel: string;
  version: string;
  /** "empty" (with a null value) for a channel that has a version but no value. */
  type: string;
  value: Uint8Array | null;
  /** An incremental value's delta_chain (src/savers/values/deltas.ts): the thread's export holds the versions it names. */
  deltaChain?: string;
}

export interface WriteRecord {
  kind: "write";
  ns: string;
  checkpointId: string;
  taskId: string;
  idx: number;
  channel: string;
  type: string;
  value: Uint8Array | null;
  taskPath: string;
}

export type TransferRecord = CheckpointRecord | BlobRecord | WriteRecord;

/** Rows of one thread, in any order; `records` is read once, before the next thread is asked for. */
export interface ThreadStream {
  threadId: string;
  records: AsyncIterable<TransferRecord>;
}

export interface RecordCounts {
  checkpoints: number;
  blobs: number;
  writes: number;
}

export const noRecords = (): RecordCounts => ({ checkpoints: 0, blobs: 0, writes: 0 });

export function countRecord(counts: RecordCounts, record: TransferRecord): void {
  if (record.kind === "checkpoint") counts.checkpoints++;
  else if (record.kind === "blob") counts.blobs++;
  else counts.writes++;
}

/** Where threads come from: one of our databases, an official saver's tables, or a transfer file. */
export interface TransferSource {
  /** For messages: "ours (postgres)", "official-sqlite", "file". */
  readonly description: string;
  /** The threads selected when the source was opened, one after another. */
  threads(): AsyncIterable<ThreadStream>;
  /** Number of threads `threads()` will yield, when the source can tell cheaply. */
  countThreads(): Promise<number | undefined>;
  close(): Promise<void>;
}

/** Which threads to read: all (optionally those with a checkpoint matching `filter`) or the named ones. */
export interface ThreadSelection {
  threadIds?: string[];
  /** Metadata filter: a thread is selected when one of its checkpoints matches. */
  filter?: Record<string, unknown>;
}

/** Pages of thread ids in id order, or the named ids (deduplicated, sorted). */
export async function* selectedThreads(
  selection: ThreadSelection,
  page: (after: string, limit: number) => Promise<string[]>,
  pageSize = 500,
): AsyncGenerator<string> {
  if (selection.threadIds) {
    yield* [...new Set(selection.threadIds)].sort();
    return;
  }
  let cursor = "";
  for (;;) {
    const ids = await page(cursor, pageSize);
    yield* ids;
    if (ids.length < pageSize) return;
    cursor = ids[ids.length - 1];
  }
}
