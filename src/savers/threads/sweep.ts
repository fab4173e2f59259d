/**
 * One retention pass: idle unpinned threads found on the per-thread table, each deleted or
 * pruned in a unit that claims its row and checks again under the lock that it is idle.
 */
import { type SQL, sql } from "drizzle-orm";
import type { Dialect, Precondition } from "../../dialects/dialect.js";
import { InvalidInputError } from "../../errors.js";
import { batchSizeOf } from "../options.js";
import { notStaging, requireThreadId } from "../values/reserved.js";
import { as } from "../values/values.js";
import { removeCheckpoints } from "./remove.js";
import type { ResolvedPolicy, SweepOptions, SweepOutcome, SweepProgress, SweepResult } from "./retention.js";

/**
 * The earliest cutoff a pass compares with, in milliseconds since the epoch (about 1200 BC):
 * no thread was written before it, and PostgreSQL's timestamps and intervals cannot go much
 * further back (a year before 4713 BC is out of range). A cutoff before it is moved to it,
 * which finds the same threads: none.
 */
const EARLIEST_CUTOFF_MS = -1e14;

/** `ms` (an expireThreads `idleSince`) as a cutoff every database can compare with. */
export function boundedCutoffMs(ms: number): number {
  return Math.max(ms, EARLIEST_CUTOFF_MS);
}

/** Thrown by a claim's precondition when the thread is not idle, pinned, or held by another transaction. */
class NotClaimed extends Error {}

/** Where a scan of idle threads stopped: the last thread's `updated_at` (milliseconds) and id. */
interface ScanCursor {
  updatedAt: number;
  threadId: string;
}

/** How `handle` decides that a thread may go: its row's `updated_at` is before `cutoff` and it is not pinned. */
export interface Claim {
  threadId: string;
  /** A value comparable with `updated_at` (Dialect.millisAgo or epochMillis). */
  cutoff: SQL;
}

/**
 * Retention on top of a dialect: finds idle threads on the per-thread table and
 * handles each in an atomic unit that first claims the thread's row (locked for the
 * unit, skipped when another transaction holds it) and whose every statement repeats
 * the idleness condition in SQL, so the decision is re-checked under the lock, by the
 * unit that deletes.
 */
export class ThreadSweeper {
  constructor(private readonly dialect: Dialect) {}

  /** The thread's row while it is idle and not pinned (what a claim locks). */
  private idleRow({ threadId, cutoff }: Claim, select: SQL): SQL {
    const t = this.dialect.columns.threads;
    return sql`select ${select} from ${t.table}
      where ${t.threadId} = ${threadId} and ${t.updatedAt} < ${cutoff} and not ${t.pinned}`;
  }

  /** The claim's condition, for a statement on another table. */
  private idle(claim: Claim): SQL {
    return sql`exists (${this.idleRow(claim, sql`1`)})`;
  }

  private precondition(claim: Claim): Precondition {
    return {
      rows: this.idleRow(claim, sql`1 as ${sql.identifier("found")}`),
      claim: true,
      failure: () => new NotClaimed(),
    };
  }

  /**
   * Removes the thread whole if it is still idle, or keeps its newest `keepLast`
   * checkpoints of each namespace. A put that lands first makes it active (skipped);
   * a put that comes after finds its parent gone (MissingParentError).
   */
  async handle(claim: Claim, policy: Pick<ResolvedPolicy, "strategy" | "keepLast">): Promise<SweepOutcome> {
    try {
      if (policy.strategy === "keep_latest") {
        const removed = await removeCheckpoints(
          this.dialect,
          claim.threadId,
          (rows) => rows.filter((row) => row.rank > policy.keepLast),
          { precondition: this.precondition(claim), guard: this.idle(claim) },
        );
        return removed ? "pruned" : "unchanged";
      }
      await this.dialect.atomically(this.deletes(claim), this.precondition(claim));
      return "deleted";
    } catch (error) {
      if (error instanceof NotClaimed) return "skipped";
      throw error;
    }
  }

  /** The thread's rows, each delete conditioned on its row being idle; the row itself last. */
  private deletes(claim: Claim): SQL[] {
    const { checkpoints, writes, blobs, threads: t } = this.dialect.columns;
    const idle = this.idle(claim);
    // Checkpoints before writes: a putWrites holding its checkpoint's lock commits first, then its rows go too.
    const dependents = [checkpoints, writes, blobs].map(
      ({ table, threadId }) => sql`delete from ${table} where ${threadId} = ${claim.threadId} and ${idle}`,
    );
    // Not through a subquery on itself (MySQL refuses that): the same condition, on the row.
    const row = sql`delete from ${t.table}
      where ${t.threadId} = ${claim.threadId} and ${t.updatedAt} < ${claim.cutoff} and not ${t.pinned}`;
    return [...dependents, row];
  }

  /**
   * Up to `limit` idle, unpinned threads after `cursor`, in (updated_at, thread_id) order:
   * a range of the `(updated_at, thread_id)` index, so a pass reads the idle threads only,
   * however many active ones the table holds.
   */
  private async idleThreads(cutoff: SQL, cursor: ScanCursor | undefined, limit: number): Promise<ScanCursor[]> {
    const t = this.dialect.columns.threads;
    let after = sql``;
    if (cursor) {
      // updated_at holds whole milliseconds on every database: the cursor's value compares exactly.
      const at = this.dialect.epochMillis(cursor.updatedAt);
      after = sql` and (${t.updatedAt} > ${at} or (${t.updatedAt} = ${at} and ${t.threadId} > ${cursor.threadId}))`;
    }
    const rows = await this.dialect.query(sql`select ${as(t.threadId, "thread_id")},
        ${this.dialect.createdAtMillis(sql`${t.updatedAt}`)} as ${sql.identifier("updated_ms")}
      from ${t.table} where ${this.idleRows(cutoff)}${after}
      order by ${t.updatedAt}, ${t.threadId} limit ${sql.raw(String(limit))}`);
    return rows.map((row) => ({ threadId: row.thread_id as string, updatedAt: Number(row.updated_ms) }));
  }

  /** How many threads are idle and unpinned as of `cutoff`: those `idleBatches` yields. */
  async countIdle(cutoff: SQL): Promise<number> {
    const t = this.dialect.columns.threads;
    const [row] = await this.dialect.query(
      sql`select count(*) as ${sql.identifier("n")} from ${t.table} where ${this.idleRows(cutoff)}`,
    );
    return Number(row?.n ?? 0);
  }

  /** The thread rows a pass handles: not written since `cutoff`, not pinned, not an import's staging. */
  private idleRows(cutoff: SQL): SQL {
    const t = this.dialect.columns.threads;
    return sql`${t.updatedAt} < ${cutoff} and not ${t.pinned} and ${notStaging(t.threadId)}`;
  }

  /**
   * `idleForMs` before the database's clock now, as a fixed value: a pass judges idleness
   * once, at its start, so a thread written after the pass began is never idle for it,
   * however long the pass takes (an expression such as now() would move with each batch).
   */
  private async cutoffNow(idleForMs: number): Promise<SQL> {
    const { dialect } = this;
    // An idleFor reaching before the earliest cutoff finds what the earliest cutoff finds.
    const bounded = Math.min(idleForMs, Date.now() - EARLIEST_CUTOFF_MS);
    const [row] = await dialect.query(
      sql`select ${dialect.createdAtMillis(dialect.millisAgo(bounded))} as ${sql.identifier("cutoff_ms")}`,
    );
    return dialect.epochMillis(boundedCutoffMs(Number(row?.cutoff_ms)));
  }

  /**
   * The idle, unpinned threads as of `cutoff`, in batches of up to `batchSize` ids, each
   * batch read when the caller asks for it: what a pass handles, `sweep` or `expireThreads`.
   */
  async *idleBatches(cutoff: SQL, batchSize: number): AsyncGenerator<string[]> {
    let cursor: ScanCursor | undefined;
    for (;;) {
      const batch = await this.idleThreads(cutoff, cursor, batchSize);
      if (batch.length === 0) return;
      cursor = batch[batch.length - 1];
      yield batch.map(({ threadId }) => threadId);
      if (batch.length < batchSize) return;
    }
  }

  /** One pass over the idle threads, in batches of `batchSize`, each thread in its own unit. */
  async sweep(policy: ResolvedPolicy, options: SweepOptions): Promise<SweepResult> {
    const batchSize = batchSizeOf(options.batchSize, 100, "sweep");
    const dryRun = options.dryRun === true;
    const cutoff = await this.cutoffNow(policy.idleForMs);
    const progress: SweepProgress = { scanned: 0, deleted: 0, pruned: 0, unchanged: 0, skipped: 0 };
    for await (const batch of this.idleBatches(cutoff, batchSize)) {
      progress.scanned += batch.length;
      for (const threadId of batch) {
        if (dryRun) {
          options.onThread?.(threadId, policy.strategy === "delete" ? "deleted" : "pruned");
          continue;
        }
        const outcome = await this.handle({ threadId, cutoff }, policy);
        progress[outcome]++;
        options.onThread?.(threadId, outcome);
      }
      options.onProgress?.({ ...progress });
    }
    return { ...progress, dryRun };
  }

  /** Sets or clears the thread's `pinned` flag; InvalidInputError when the thread has no checkpoint. */
  async setPinned(threadId: string, pinned: boolean): Promise<void> {
    requireThreadId(threadId);
    const t = this.dialect.columns.threads;
    // The row is locked before the update and checked in the same unit: checked after it, a
    // first put landing in between made a pin that found no row look successful.
    await this.dialect.atomically(
      [
        sql`update ${t.table} set ${sql.identifier(t.pinned.name)} = ${sql.raw(pinned ? "true" : "false")}
        where ${t.threadId} = ${threadId}`,
      ],
      {
        rows: sql`select 1 as ${sql.identifier("found")} from ${t.table} where ${t.threadId} = ${threadId}`,
        exclusive: true,
        failure: () =>
          new InvalidInputError(`${pinned ? "pinThread" : "unpinThread"}: thread "${threadId}" has no checkpoints`),
      },
    );
  }
}
