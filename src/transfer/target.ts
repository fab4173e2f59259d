/**
 * The import target: writes each thread under a staging id, then renames it into place in one atomic unit (or
 * replaces the old thread).
 */
import { createHash, randomUUID } from "node:crypto";
import { type Column, type SQL, sql, type Table } from "drizzle-orm";
import type { Dialect, Precondition } from "../dialects/dialect.js";
import { ThreadConflictError } from "../errors.js";
import { copyRows, hasRows, threadHasRows } from "../savers/threads/copy-rows.js";
import { claimThreadRow } from "../savers/threads/thread-lock.js";
import { requireThreadId, STAGING_PREFIX } from "../savers/values/reserved.js";
import { writeRowColumns } from "../savers/write/write-statements.js";
import { recordLine } from "./format.js";
import type { BlobRecord, CheckpointRecord, TransferRecord, WriteRecord } from "./records.js";
import { OurSource } from "./sources/ours.js";
import { BATCH, BATCH_BYTES, canonical, recordBytes, stagedInserts } from "./staged-rows.js";

export { BATCH_BYTES } from "./staged-rows.js";

/** The checkpoint id and channel of the pending-write row naming the import that owns a staging thread. */
const OWNER = "__import_owner__";

export type ThreadOutcome = "imported" | "replaced" | "unchanged";

/**
 * Where a thread is written before it becomes visible: its rows go to a staging
 * thread id in batches (each a short transaction), then one transaction renames
 * them to the real id. A run killed half way leaves only staging rows, which the
 * next import of that thread removes first.
 *
 * The import that last began a thread owns its staging rows: a row of its own token
 * among them, which every later unit of that import requires (and locks) before it
 * writes. Another import of the same thread starting meanwhile takes the rows over, so
 * the first one fails its next unit with a ThreadConflictError, never renaming a mix.
 */
export function stagingThreadId(threadId: string): string {
  return `${STAGING_PREFIX}${createHash("sha256").update(threadId).digest("hex")}`;
}

/** Writes threads into one of our databases through its dialect's `insert` and `atomically`. */
export class ThreadWriter {
  private checkpoints: CheckpointRecord[] = [];
  private blobs: BlobRecord[] = [];
  private writes: WriteRecord[] = [];
  /** recordBytes of the rows held. */
  private heldBytes = 0;
  private staging = "";
  private threadId = "";
  /** This writer's token in the staging thread's owner row. */
  private owner = "";

  constructor(private readonly dialect: Dialect) {}

  /** Staged rows go to these; the per-thread row is recomputed once a thread is in place. */
  private tables(): { table: Table; threadId: Column }[] {
    const { checkpoints, blobs, writes } = this.dialect.columns;
    return [checkpoints, blobs, writes];
  }

  private deleteThread(threadId: string): SQL[] {
    return this.tables().map(({ table, threadId: column }) => sql`delete from ${table} where ${column} = ${threadId}`);
  }

  /** Starts a thread: takes its staging rows over (what an interrupted import left, or a running one's). */
  async begin(threadId: string): Promise<void> {
    requireThreadId(threadId);
    this.threadId = threadId;
    this.staging = stagingThreadId(threadId);
    this.owner = randomUUID();
    this.checkpoints = [];
    this.blobs = [];
    this.writes = [];
    this.heldBytes = 0;
    // First the owner row: it waits for a unit of the previous owner in progress, which
    // then has committed, and fails that owner's later units. Then, in a statement of its
    // own that sees those rows, everything else staged goes.
    await this.dialect.atomically([this.claimOwnerRow()]);
    await this.dialect.atomically(
      this.tables().map(
        ({ table, threadId: column }) =>
          sql`delete from ${table} where ${column} = ${this.staging} and not (${this.isOwnerRow(table)})`,
      ),
      this.owned(),
    );
  }

  /** The staging thread's owner row, with this writer's token (replacing another's). */
  private claimOwnerRow(): SQL {
    const w = this.dialect.columns.writes;
    return this.dialect.insert({
      table: w.table,
      columns: writeRowColumns(w),
      rows: [[this.staging, "", OWNER, OWNER, 0, OWNER, "empty", null, this.owner]],
      conflictTarget: [w.threadId, w.checkpointNs, w.checkpointId, w.taskId, w.idx],
      update: [w.taskPath],
    });
  }

  /** Whether a row of `table` is the owner row (only pending writes hold one). */
  private isOwnerRow(table: Table): SQL {
    const w = this.dialect.columns.writes;
    return table === w.table ? sql`${w.checkpointId} = ${OWNER}` : sql`1 = 0`;
  }

  /**
   * The precondition of every later unit of this thread's import: its staging rows are
   * still this writer's. `exclusive` (the units that make them the thread's): claimed, so
   * the unit also runs statement after statement (see Dialect.atomically), deleting the
   * replaced thread's rows before the renames take their keys. With `emptyThread`: only
   * while that thread has no rows.
   */
  private owned(exclusive = false, emptyThread?: string): Precondition {
    const w = this.dialect.columns.writes;
    const empty = emptyThread === undefined ? sql`` : sql` and not (${hasRows(this.tables(), emptyThread)})`;
    return {
      rows: sql`select 1 from ${w.table} where ${w.threadId} = ${this.staging} and ${w.nsKey} = ${this.dialect.nsKey("")}
        and ${w.checkpointId} = ${OWNER} and ${w.taskId} = ${OWNER} and ${w.idx} = 0 and ${w.taskPath} = ${this.owner}${empty}`,
      failure: () =>
        new ThreadConflictError(
          `another import of thread "${this.threadId}" started meanwhile and took it over; this one wrote nothing of it`,
        ),
      claim: exclusive,
    };
  }

  /** Removes the owner row, in the unit that makes the staged rows the thread's. */
  private releaseOwner(): SQL {
    const w = this.dialect.columns.writes;
    return sql`delete from ${w.table} where ${w.threadId} = ${this.staging} and ${w.checkpointId} = ${OWNER}`;
  }

  async add(record: TransferRecord): Promise<void> {
    if (record.kind === "checkpoint") this.checkpoints.push(record);
    else if (record.kind === "blob") this.blobs.push(record);
    else this.writes.push(record);
    this.heldBytes += recordBytes(record);
    if (this.checkpoints.length + this.blobs.length + this.writes.length >= BATCH || this.heldBytes >= BATCH_BYTES)
      await this.flush();
  }

  /** Makes the staged thread the real one, unless the real one exists with other content. */
  async finish(threadId: string, replace: boolean): Promise<ThreadOutcome> {
    await this.flush();
    // The staged rows move in as a copy and a delete (Spider cannot update the column its
    // tables are partitioned by), which leave the owner row to releaseOwner.
    const rename = this.tables().flatMap(({ table, threadId: column }) => {
      const staged = sql`not (${this.isOwnerRow(table)})`;
      return [
        copyRows(table, column, this.staging, threadId, { where: staged }),
        sql`delete from ${table} where ${column} = ${this.staging} and ${staged}`,
      ];
    });
    if (!(await this.exists(threadId))) {
      try {
        // The thread's row first, as every change to a thread: a put that created the
        // thread since exists() looked has committed, and the unit finds it not empty.
        await this.dialect.atomicallyUntilSettled([], {
          before: [claimThreadRow(this.dialect, threadId)],
          precondition: this.owned(true, threadId),
          after: [this.releaseOwner(), ...rename],
        });
        await this.dialect.refreshThread(threadId);
        return "imported";
      } catch (error) {
        // Not ours any more, or the thread got rows meanwhile: then as if it had had them.
        if (!(error instanceof ThreadConflictError) || !(await this.exists(threadId))) throw error;
      }
    }
    if ((await this.digest(this.staging)) === (await this.digest(threadId))) {
      await this.abort();
      // An import killed between its rename and the refresh left the rows without their
      // thread row (unseen by searchThreads, counts, pin and sweeps): this run repairs it.
      await this.dialect.refreshThread(threadId);
      return "unchanged";
    }
    if (!replace) {
      await this.abort();
      throw new ThreadConflictError(
        `target thread "${threadId}" already exists with other content (replace it with --replace); nothing was written`,
      );
    }
    // The old rows go as deleteThread removes them, the thread's row claimed first (as every
    // change to a thread takes it: a prune or a deletion of the thread waits, or is waited
    // for, instead of deadlocking), then round after round until none is left: a put that
    // held its parent's lock when the deletes came is waited for, and what it wrote goes
    // too; a later one finds its parent gone (MissingParentError) or lands whole on the new
    // rows. Then, in the same transaction, the staged rows move in.
    await this.dialect.atomicallyUntilSettled(this.deleteThread(threadId), {
      before: [claimThreadRow(this.dialect, threadId)],
      precondition: this.owned(true),
      after: [this.releaseOwner(), ...rename],
    });
    await this.dialect.refreshThread(threadId);
    return "replaced";
  }

  /** Removes the staged rows of the current thread, unless another import has taken them over. */
  async abort(): Promise<void> {
    this.checkpoints = [];
    this.blobs = [];
    this.writes = [];
    this.heldBytes = 0;
    if (!this.staging) return;
    try {
      await this.dialect.atomically(this.deleteThread(this.staging), this.owned());
    } catch (error) {
      if (!(error instanceof ThreadConflictError)) throw error;
    }
  }

  /** Whether the thread has a row in one of the tables an import writes. */
  private exists(threadId: string): Promise<boolean> {
    return threadHasRows((statement) => this.dialect.query(statement), this.tables(), threadId);
  }

  /**
   * A digest of a thread's rows that does not depend on their order: the sum of the
   * SHA-256 of every row's line in the transfer format. Reads the thread page by page.
   */
  private async digest(threadId: string): Promise<string> {
    let sum = 0n;
    let rows = 0;
    for await (const record of new OurSource(this.dialect).thread(threadId)) {
      if (record.kind === "write" && record.checkpointId === OWNER) continue;
      const line = recordLine(
        record.kind === "checkpoint" ? { ...record, metadata: canonical(record.metadata) } : record,
      );
      sum = (sum + BigInt(`0x${createHash("sha256").update(line).digest("hex")}`)) % 2n ** 256n;
      rows++;
    }
    return `${rows}:${sum.toString(16)}`;
  }

  private async flush(): Promise<void> {
    const { checkpoints, blobs, writes } = this;
    const statements = stagedInserts(this.dialect, this.staging, { checkpoints, blobs, writes });
    this.checkpoints = [];
    this.blobs = [];
    this.writes = [];
    this.heldBytes = 0;
    if (statements.length > 0) await this.dialect.atomically(statements, this.owned());
  }
}
