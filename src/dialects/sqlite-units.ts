/**
 * The SQLite write units: BEGIN IMMEDIATE transactions (the database's write lock taken
 * up front), one grouped transaction for a driver that groups the writes of one turn of
 * the event loop, and on a batch-only driver (Cloudflare D1) one batch each, whose
 * precondition is a statement that fails the batch.
 */
import { type SQL, sql } from "drizzle-orm";
import type { Executor } from "../sql/executor.js";
import { isBound, type Statement } from "../sql/statements.js";
import { errorChain, readIn, retryOnConflict, settleIn } from "./common-sql.js";
import type { CheckpointColumns, Dialect, Postcondition, Precondition, ThreadColumns } from "./dialect.js";
import { deleteEmptyThread, onConflictThreadRefresh, type ThreadSqlParts } from "./thread-sql.js";

/**
 * The lock another connection held past the busy timeout (better-sqlite3 and libSQL
 * name it by SQLite's code): the unit's BEGIN IMMEDIATE failed, so nothing was written.
 */
export const isBusy = (error: unknown) =>
  [...errorChain(error)].some((e) => typeof e.code === "string" && e.code.startsWith("SQLITE_BUSY"));

/** What the SQLite error of a failed guard quotes ("bad JSON path: '<this>'"). */
const GUARD_FAILED = "langgraph-checkpoint-drizzle: precondition failed";
/** The same for a guard run after a batch's writes ({@link Dialect.atomicallyVerified}). */
const CHECK_FAILED = "langgraph-checkpoint-drizzle: postcondition failed";

const guards = { [GUARD_FAILED]: new WeakMap<SQL, SQL>(), [CHECK_FAILED]: new WeakMap<SQL, SQL>() };

/**
 * A statement that fails (and so rolls back) its batch unless `rows`, a select, has a
 * row: json_extract raises "bad JSON path" for a path not starting with "$", quoting
 * it (`quoted`). This is how a batch-only driver checks a precondition: nothing can be
 * read between the statements of a batch, but one of them can stop it.
 */
export function guard(rows: Statement, quoted: keyof typeof guards = GUARD_FAILED): Statement {
  const wrap = (select: SQL) => {
    let wrapped = guards[quoted].get(select);
    if (!wrapped) {
      wrapped = sql`select json_extract('{}', case when exists (${select}) then '$' else '${sql.raw(quoted)}' end)`;
      guards[quoted].set(select, wrapped); // one template per template: compiled once
    }
    return wrapped;
  };
  return isBound(rows) ? { template: wrap(rows.template), values: rows.values } : wrap(rows);
}

/** Whether a batch failed on a guard quoting `quoted` (the message may be wrapped by the driver). */
function guardFailed(error: unknown, quoted: keyof typeof guards = GUARD_FAILED): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; depth++, current = current.cause) {
    if (current.message.includes(quoted)) return true;
  }
  return false;
}

/**
 * The atomic units on a batch-only driver (Cloudflare D1): each is one batch, which the
 * database runs as one transaction, alone. A precondition is a guard first in the batch;
 * a postcondition ({@link Dialect.atomicallyVerified}) a guard last.
 */
export function batchUnits(batch: NonNullable<Executor["batch"]>) {
  const verified = async (writes: Statement[], precondition?: Precondition, postcondition?: Postcondition) => {
    const first = precondition ? [guard(precondition.rows)] : [];
    const last = postcondition ? [guard(postcondition.rows, CHECK_FAILED)] : [];
    try {
      await batch([...first, ...writes, ...last]);
    } catch (error) {
      if (precondition && guardFailed(error)) throw precondition.failure();
      if (postcondition && guardFailed(error, CHECK_FAILED)) throw postcondition.failure();
      throw error;
    }
  };
  const atomically = (writes: Statement[], precondition?: Precondition) => verified(writes, precondition);
  return { atomically, verified, guardFailed: (error: unknown) => guardFailed(error) };
}

type WriteUnits = Pick<
  Dialect,
  "atomically" | "atomicallyUntilSettled" | "atomicallyReading" | "atomicallyVerified" | "refreshThread"
>;

/** The write units of the SQLite dialect. */
export function sqliteWriteUnits(
  executor: Executor,
  threads: ThreadColumns,
  checkpoints: CheckpointColumns,
  threadSql: ThreadSqlParts,
): WriteUnits {
  // The row's refresh: the transaction (or batch) holds the database's write lock, so no
  // put runs meanwhile and no row is ever held by another transaction: nothing to skip.
  const refreshing = (threadId: string) => [
    onConflictThreadRefresh(threads, checkpoints, threadSql, threadId),
    deleteEmptyThread(threads, checkpoints, threadId),
  ];
  const batch = executor.batch?.bind(executor);
  return batch ? batchOnlyUnits(batch, refreshing) : transactionUnits(executor, refreshing);
}

/** The write units on a batch-only driver (Cloudflare D1): one batch each, which runs alone. */
function batchOnlyUnits(
  batch: NonNullable<Executor["batch"]>,
  refreshing: (threadId: string) => Statement[],
): WriteUnits {
  const batched = batchUnits(batch);
  return {
    atomically: (writes, precondition) => retryOnConflict(isBusy, () => batched.atomically(writes, precondition)),
    // One batch. Elsewhere the rounds are for a put that committed while the deletes ran
    // (or held a lock they waited for). A D1 database runs its batches and statements one
    // at a time, each batch's statements in one go as one transaction, so none commits in
    // between: once the batch is done, every row of the thread is gone and a second round
    // would change nothing. A put landing later finds its parent gone (its guard fails)
    // or starts the thread anew, as after a settled delete.
    atomicallyUntilSettled: (writes, unit) =>
      retryOnConflict(isBusy, () =>
        batched.atomically([...(unit?.before ?? []), ...writes, ...(unit?.after ?? [])], unit?.precondition),
      ),
    atomicallyVerified: (writes, precondition, postcondition) =>
      retryOnConflict(isBusy, () => batched.verified(writes, precondition, postcondition)),
    refreshThread: async (threadId) => {
      await batch(refreshing(threadId));
    },
  };
}

/** The write units on a driver with transactions: BEGIN IMMEDIATE, which takes the write lock up front. */
function transactionUnits(executor: Executor, refreshing: (threadId: string) => Statement[]): WriteUnits {
  return {
    // The write lock already keeps deletes out until commit: the precondition's rows need
    // no lock of their own.
    atomically: (writes, precondition) =>
      retryOnConflict(isBusy, async () => {
        if (executor.transactionGrouped) {
          await executor.transactionGrouped((tx) => {
            if (precondition && tx.all(precondition.rows).length === 0) throw precondition.failure();
            for (const write of writes) tx.run(write);
          });
          return;
        }
        await executor.transaction(async (tx) => {
          if (precondition && (await tx.all(precondition.rows)).length === 0) throw precondition.failure();
          for (const write of writes) await tx.run(write);
        });
      }),
    atomicallyUntilSettled: (writes, unit) =>
      retryOnConflict(isBusy, () =>
        executor.transaction((tx) => settleIn(tx, writes, unit, (precondition) => precondition.rows)),
      ),
    atomicallyReading: (work, precondition) =>
      retryOnConflict(isBusy, () =>
        executor.transaction((tx) => readIn(tx, work, precondition, (locked) => locked.rows)),
      ),
    refreshThread: (threadId) =>
      retryOnConflict(isBusy, () =>
        executor.transaction(async (tx) => {
          for (const statement of refreshing(threadId)) await tx.run(statement);
        }),
      ),
  };
}
