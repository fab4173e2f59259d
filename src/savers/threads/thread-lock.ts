/**
 * The one lock every change to a thread takes first: its row in the per-thread table. A
 * put's upsert, a sweep's claim and the row's refresh take it on their own; a deletion
 * through {@link claimThreadRow}; removals, re-sealing and copies through {@link holdingThread}
 * (an encrypted copy through {@link readingHoldingThread}).
 */
import { sql } from "drizzle-orm";
import type { Dialect, Postcondition, Precondition, UnitRunner } from "../../dialects/dialect.js";
import { UnsupportedDriverError } from "../../errors.js";
import type { Statement } from "../../sql/statements.js";

/**
 * An upsert that locks the thread's row, inserting a placeholder when it has none: unlike
 * a locking read, it waits for a put that is inserting the row, so the unit that runs it
 * first holds the row before any other of the thread's rows. For a unit that deletes the
 * row (the placeholder goes with it).
 */
export function claimThreadRow(dialect: Dialect, threadId: string): Statement {
  const t = dialect.columns.threads;
  const epoch = dialect.epochMillis(0);
  return dialect.insert({
    table: t.table,
    columns: [t.threadId, t.createdAt, t.updatedAt],
    rows: [[threadId, epoch, epoch]],
    conflictTarget: [t.threadId],
    update: [t.threadId],
  });
}

/** The thread's row was gone when a unit came to lock it. */
class NoThreadRow extends Error {}

/** The thread's row, locked exclusively; `missing` is thrown without one. */
function threadRow(dialect: Dialect, threadId: string, missing: () => Error = () => new NoThreadRow()): Precondition {
  const t = dialect.columns.threads;
  return {
    rows: sql`select 1 as ${sql.identifier("found")} from ${t.table} where ${t.threadId} = ${threadId}`,
    exclusive: true,
    failure: missing,
  };
}

/** What else a unit holding a thread needs. */
export interface HoldingOptions {
  /** Checked after the unit's writes (`Dialect.atomicallyVerified`: only on a batch-only driver). */
  postcondition?: Postcondition;
  /**
   * The error when the thread has no row (it has no checkpoints), nothing run: for a unit
   * that needs the thread to be there (a copy's source), instead of running as it is.
   */
  missing?: () => Error;
}

/**
 * Runs the statements as one unit that first locks the thread's row exclusively: changes
 * to one thread then wait for each other instead of taking the rows of its tables in
 * different orders (a deadlock). Without a row (the thread deleted or emptied meanwhile)
 * there is nothing to wait for: the unit runs as it is, unless `missing` says otherwise.
 */
export async function holdingThread(
  dialect: Dialect,
  threadId: string,
  statements: Statement[],
  { postcondition, missing }: HoldingOptions = {},
): Promise<void> {
  const run = (precondition?: Precondition) => {
    if (!postcondition) return dialect.atomically(statements, precondition);
    if (!dialect.atomicallyVerified) {
      throw new UnsupportedDriverError(`${dialect.executor.driver} cannot check a unit after its writes`);
    }
    return dialect.atomicallyVerified(statements, precondition, postcondition);
  };
  try {
    await run(threadRow(dialect, threadId, missing));
  } catch (error) {
    if (!(error instanceof NoThreadRow)) throw error;
    await run();
  }
}

/**
 * {@link holdingThread} for a unit that reads the thread's rows and writes what it made
 * of them: nothing changes the thread between the read and the writes. Only where the
 * dialect reads inside a unit (`Dialect.atomicallyReading`; not on Cloudflare D1).
 */
export async function readingHoldingThread<T>(
  dialect: Dialect,
  threadId: string,
  work: (tx: UnitRunner) => Promise<T>,
  missing?: () => Error,
): Promise<T> {
  const reading = dialect.atomicallyReading;
  if (!reading) {
    throw new UnsupportedDriverError(
      `${dialect.executor.driver} runs no interactive transactions, and this operation needs one; nothing was written`,
    );
  }
  try {
    return await reading(work, threadRow(dialect, threadId, missing));
  } catch (error) {
    if (!(error instanceof NoThreadRow)) throw error;
    return reading(work);
  }
}
