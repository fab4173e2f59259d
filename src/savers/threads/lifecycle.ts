/**
 * Thread lifecycle: copy a thread, prune or delete its checkpoints, delete by run, expire
 * idle threads; every change to a thread is one atomic unit.
 */
import { type Column, getTableName, sql, type Table } from "drizzle-orm";
import type { Dialect } from "../../dialects/dialect.js";
import { InvalidInputError } from "../../errors.js";
import { optionKeys, requireKnownOptions } from "../../known-options.js";
import type { Sealer } from "../../serde/sealing.js";
import { batchSizeOf } from "../options.js";
import { copiedResealing, copySealedInBatches, type ThreadCopy } from "../values/copy-resealing.js";
import { storedFilterEntries } from "../values/metadata.js";
import { notStaging, requireThreadId } from "../values/reserved.js";
import { as, MAX_KEY_BYTES } from "../values/values.js";
import { copyRows, threadHasRows } from "./copy-rows.js";
import { chunks, removeCheckpoints } from "./remove.js";
import { keepLastOf } from "./retention.js";
import { boundedCutoffMs, ThreadSweeper } from "./sweep.js";
import { claimThreadRow, holdingThread, readingHoldingThread } from "./thread-lock.js";

export type PruneStrategy = "keep_latest" | "delete";

/** The options of `prune`. */
export interface PruneOptions {
  /** "keep_latest" (default) keeps each namespace's newest `keepLast` checkpoints; "delete" removes the threads. */
  strategy?: PruneStrategy;
  /** With "keep_latest": checkpoints kept per namespace; default 1. */
  keepLast?: number;
}

export interface ExpireThreadsOptions {
  /** Threads whose newest checkpoint was created before this time are expired (never pinned ones). */
  idleSince: Date;
  /** "delete" (default) removes the threads; "keep_latest" keeps each one's newest checkpoints. */
  strategy?: PruneStrategy;
  /** Threads handled per batch, each thread in its own short transaction; default 100. */
  batchSize?: number;
  /** Called after each batch with the number of threads handled so far. */
  onProgress?: (progress: { threads: number }) => void;
  /**
   * Changes nothing: returns how many threads a run would handle now and passes each to
   * `onThread`, found by the same rule (what the command line's `expire --dry-run` lists).
   */
  dryRun?: boolean;
  /** With `dryRun`: called with each thread a run would handle. */
  onThread?: (threadId: string) => void;
}

/**
 * Thread lifecycle on top of a dialect: copy, prune, delete by run, expire idle
 * threads. Every change to a thread is one
 * atomic unit, so other threads' writers are never blocked for long.
 */
export class ThreadLifecycle {
  private readonly sweeper: ThreadSweeper;

  constructor(
    private readonly dialect: Dialect,
    private readonly sealer?: Sealer,
  ) {
    this.sweeper = new ThreadSweeper(dialect);
  }

  async copyThread(sourceThreadId: string, targetThreadId: string): Promise<void> {
    requireThreadId(sourceThreadId, "source thread id");
    requireThreadId(targetThreadId, "target thread id");
    if (sourceThreadId === targetThreadId)
      throw new InvalidInputError("copyThread: source and target are the same thread");
    const tables = this.tables();
    const targetHasRows = () => threadHasRows((statement) => this.dialect.query(statement), tables, targetThreadId);
    const notEmpty = (options?: ErrorOptions) =>
      new InvalidInputError(`copyThread: target thread "${targetThreadId}" is not empty; nothing was copied`, options);
    if (await targetHasRows()) throw notEmpty();
    await this.requireCopiedKeysWithinLimit(sourceThreadId, targetThreadId);
    // insert ... select keeps blobs and writes as bytes, never decoding them. Holding the
    // source's row: no put, rekey or removal changes it meanwhile. Without one the source
    // has no checkpoints (as pinThread says): a copy of nothing would hide a mistyped id.
    // A copy is a new thread: not pinned, whatever the source is.
    const copies = tables.map(({ table, threadId }) =>
      copyRows(table, threadId, sourceThreadId, targetThreadId, { skip: [this.dialect.columns.threads.pinned] }),
    );
    let sourceRefused: Error | undefined;
    const missing = () => {
      sourceRefused = new InvalidInputError(
        `copyThread: source thread "${sourceThreadId}" has no checkpoints; nothing was copied`,
      );
      return sourceRefused;
    };
    try {
      if (!this.sealer) await holdingThread(this.dialect, sourceThreadId, copies, { missing });
      else await this.copySealed(this.sealer, { source: sourceThreadId, target: targetThreadId, copies, missing });
    } catch (error) {
      // The target was written after the check (a put, another copy): the copy's unit met
      // its rows as a key violation and wrote nothing. Say so, as the check would have;
      // a source found empty is said as such, whatever the target holds by then.
      if (error !== sourceRefused && (await targetHasRows())) throw notEmpty({ cause: error });
      throw error;
    }
  }

  /**
   * An encrypted copy: sealed values are bound to their thread, so the copied ones are
   * re-sealed for the target. Where the dialect reads inside a unit, the copy's unit
   * reads what it inserted and re-seals it before it commits: the copy is whole or not
   * there. On a batch-only driver (D1) the values are read before the unit, which checks
   * that none changed meanwhile.
   */
  private async copySealed(sealer: Sealer, copy: ThreadCopy): Promise<void> {
    const { source, target, copies, missing } = copy;
    if (this.dialect.atomicallyReading) {
      await readingHoldingThread(
        this.dialect,
        source,
        async (tx) => {
          for (const statement of copies) await tx.run(statement);
          for (const reseal of await copiedResealing(tx, this.dialect, sealer, source, target)) await tx.run(reseal);
        },
        missing,
      );
      return;
    }
    await copySealedInBatches(this.dialect, sealer, copy);
  }

  /**
   * A longer target id lengthens every key of the copy: refuses the copy when one would
   * pass the 2,600-byte limit a put or putWrites of the copy would then meet.
   */
  private async requireCopiedKeysWithinLimit(sourceThreadId: string, targetThreadId: string): Promise<void> {
    const targetBytes = Buffer.byteLength(targetThreadId, "utf8");
    if (targetBytes <= Buffer.byteLength(sourceThreadId, "utf8")) return; // the source's keys met the same limit
    const room = MAX_KEY_BYTES - targetBytes;
    const { checkpoints: c, blobs: b, writes: w } = this.dialect.columns;
    const keys: [Table, Column, Column[]][] = [
      [c.table, c.threadId, [c.checkpointNs, c.checkpointId]],
      [b.table, b.threadId, [b.checkpointNs, b.channel, b.version]],
      [w.table, w.threadId, [w.checkpointNs, w.checkpointId, w.taskId]],
    ];
    for (const [table, threadId, parts] of keys) {
      // A character is at most 4 bytes of UTF-8, so only keys of more than room / 4
      // characters can be too long (MySQL's length() counts bytes: more rows, same answer).
      const length = sql.join(
        parts.map((part) => sql`length(${part})`),
        sql` + `,
      );
      const rows = await this.dialect.query(
        sql`select ${sql.join(
          parts.map((part, i) => as(part, `part${i}`)),
          sql`, `,
        )} from ${table} where ${threadId} = ${sourceThreadId} and ${length} > ${Math.floor(room / 4)}`,
      );
      for (const row of rows) {
        const bytes = parts.reduce((sum, _, i) => sum + byteLength(row[`part${i}`]), targetBytes);
        if (bytes > MAX_KEY_BYTES) {
          throw new InvalidInputError(
            `copyThread: under the target thread id a key of ${getTableName(table)} would be ${bytes} bytes of UTF-8; the limit is 2,600 bytes; nothing was copied`,
          );
        }
      }
    }
  }

  async deleteThreads(threadIds: string[]): Promise<void> {
    requireThreadIds(threadIds, "deleteThread");
    for (const threadId of threadIds) {
      // Until settled: a late put holding its parent's lock is waited for, then its rows go too.
      // The thread's row first, even while a put is inserting it: a deletion that met the
      // row only in a later round held the other tables' rows meanwhile (a deadlock).
      await this.dialect.atomicallyUntilSettled(
        this.tables().map(({ table, threadId: column }) => sql`delete from ${table} where ${column} = ${threadId}`),
        { before: [claimThreadRow(this.dialect, threadId)] },
      );
    }
  }

  async prune(threadIds: string[], options: PruneOptions): Promise<void> {
    // Every id is checked before any thread is touched: a bad one later in the list writes nothing.
    requireThreadIds(threadIds, "prune");
    requireKnownOptions(options as unknown, "prune", PRUNE_OPTION_KEYS);
    const { strategy = "keep_latest", keepLast } = options;
    if (strategy === "delete") {
      if (keepLast !== undefined)
        throw new InvalidInputError('prune: keepLast applies to the "keep_latest" strategy only');
      return this.deleteThreads(threadIds);
    }
    if (strategy !== "keep_latest") throw new InvalidInputError(`prune: unknown strategy "${String(strategy)}"`);
    const kept = keepLastOf(keepLast, "prune: keepLast");
    for (const threadId of threadIds) {
      await removeCheckpoints(this.dialect, threadId, (rows) => rows.filter((row) => row.rank > kept));
    }
  }

  async deleteForRuns(runIds: string[]): Promise<void> {
    if (!Array.isArray(runIds) || runIds.some((id) => typeof id !== "string")) {
      throw new InvalidInputError("deleteForRuns: runIds must be an array of strings");
    }
    if (runIds.length === 0) return;
    const c = this.dialect.columns.checkpoints;
    const runs = new Set(runIds);
    const threads = new Set<string>();
    for (const chunk of chunks(runIds)) {
      const matches = sql.join(
        chunk.map((runId) => this.dialect.metadataMatches(storedFilterEntries({ run_id: runId }))),
        sql` or `,
      );
      const rows = await this.dialect.query(
        sql`select distinct ${as(c.threadId, "thread_id")} from ${c.table} where (${matches}) and ${notStaging(c.threadId)}`,
      );
      for (const row of rows) threads.add(row.thread_id as string);
    }
    for (const threadId of threads) {
      await removeCheckpoints(this.dialect, threadId, (rows) =>
        rows.filter((row) => typeof row.metadata.run_id === "string" && runs.has(row.metadata.run_id)),
      );
    }
  }

  async expireThreads(options: ExpireThreadsOptions): Promise<number> {
    requireKnownOptions(options, "expireThreads", EXPIRE_KEYS);
    const { idleSince, strategy = "delete", onProgress, dryRun = false, onThread } = options;
    if (!(idleSince instanceof Date) || Number.isNaN(idleSince.getTime())) {
      throw new InvalidInputError("expireThreads: idleSince must be a valid Date");
    }
    const batchSize = batchSizeOf(options?.batchSize, 100, "expireThreads");
    if (strategy !== "delete" && strategy !== "keep_latest") {
      throw new InvalidInputError(`expireThreads: unknown strategy "${String(strategy)}"`);
    }
    // Idle by the thread's row, whose updated_at every write keeps at its newest checkpoint's
    // time; the claim re-checks that under the row's lock. A row another transaction holds is
    // skipped, not waited for: a put in progress makes the thread active, and another process
    // expiring it handles it (waiting made concurrent expirers go in lockstep).
    const cutoff = this.dialect.epochMillis(boundedCutoffMs(idleSince.getTime()));
    // Counting needs no ids: one count over the same index range.
    if (dryRun && !onThread) return this.sweeper.countIdle(cutoff);
    let touched = 0;
    for await (const batch of this.sweeper.idleBatches(cutoff, batchSize)) {
      if (dryRun) {
        for (const threadId of batch) onThread?.(threadId);
        touched += batch.length;
        continue;
      }
      let handled = 0;
      for (const threadId of batch) {
        const outcome = await this.sweeper.handle({ threadId, cutoff }, { strategy, keepLast: 1 });
        if (outcome !== "skipped") handled++;
      }
      touched += handled;
      if (handled > 0) onProgress?.({ threads: touched });
    }
    return touched;
  }

  /** Every table holding a thread's rows, the per-thread row included. */
  private tables(): { table: Table; threadId: Column }[] {
    const { checkpoints, blobs, writes, threads } = this.dialect.columns;
    return [threads, checkpoints, blobs, writes].map(({ table, threadId }) => ({ table, threadId }));
  }
}

const PRUNE_OPTION_KEYS = optionKeys<PruneOptions>({ strategy: true, keepLast: true });
const EXPIRE_KEYS = optionKeys<ExpireThreadsOptions>({
  idleSince: true,
  strategy: true,
  batchSize: true,
  onProgress: true,
  dryRun: true,
  onThread: true,
});

/** Checks every id of a list up front, so that a call given a bad one changes no thread. */
function requireThreadIds(threadIds: unknown, call: string): void {
  if (!Array.isArray(threadIds)) throw new InvalidInputError(`${call}: threadIds must be an array`);
  for (const threadId of threadIds) requireThreadId(threadId);
}

/** Bytes of a key part as read back: text, or a MySQL namespace's binary. */
function byteLength(part: unknown): number {
  if (part instanceof Uint8Array) return part.length;
  return Buffer.byteLength(String(part ?? ""), "utf8");
}
