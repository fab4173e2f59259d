/**
 * The executor over one SQLite connection, for better-sqlite3 and the public-API fallback:
 * BEGIN IMMEDIATE transactions, and on a synchronous driver one commit for the units queued
 * in the same turn of the event loop.
 */
import { sql } from "drizzle-orm";
import type { Executor, Row, Runner, SyncRunner, TransactionStyle } from "../sql/executor.js";
import type { Bound, Statement } from "../sql/statements.js";
import { type Gate, oneConnection } from "./one-connection.js";

/** Runs statements on the one connection of a SQLite database, as it comes. */
export interface SqliteConnection {
  all(statement: Statement): Row[] | Promise<Row[]>;
  run(statement: Statement): number | Promise<number>;
}

/** Transaction control, as templates: compiled once per connection, not on every unit. */
const control = (template: ReturnType<typeof sql>): Bound => ({ template, values: {} });
const BEGIN = control(sql`begin immediate`);
const COMMIT = control(sql`commit`);
const ROLLBACK = control(sql`rollback`);
const SAVEPOINT = control(sql`savepoint lgcd_unit`);
const RELEASE = control(sql`release lgcd_unit`);
const ROLLBACK_UNIT = control(sql`rollback to lgcd_unit`);

/**
 * An executor over a single SQLite connection. A transaction is BEGIN IMMEDIATE ...
 * COMMIT on that connection: the write lock is taken up front, so other processes
 * wait (busy_timeout) instead of failing on a lock upgrade.
 */
export function serialSqliteExecutor(
  driver: string,
  transactions: TransactionStyle,
  connection: SqliteConnection,
  compile: Executor["compile"],
  gate: Gate = {},
  synchronous?: SyncRunner,
): Executor {
  const runner: Runner = {
    all: async (statement) => connection.all(statement),
    run: async (statement) => connection.run(statement),
    script: async (statement) => {
      await connection.run(statement);
    },
  };
  return oneConnection(
    {
      driver,
      transactions,
      compile,
      ...runner,
      async transaction(work) {
        await connection.run(BEGIN);
        try {
          const result = await work(runner);
          await connection.run(COMMIT);
          return result;
        } catch (error) {
          // The work's own error matters, not a failed rollback's.
          await Promise.resolve()
            .then(() => connection.run(ROLLBACK))
            .catch(() => {});
          throw error;
        }
      },
      transactionGrouped: synchronous && groupCommit(synchronous, gate),
    },
    gate,
  );
}

/** A unit waiting for the next group commit. */
interface QueuedUnit {
  work: (tx: SyncRunner) => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Executor.transactionGrouped on a synchronous connection. The units queued until the
 * event loop's next check phase run in one transaction: a commit writes every page it
 * changed to the WAL, and most of the pages a put changes (the ends of the tables and
 * their time-ordered indexes) are the same pages for every put, so eight writers' puts
 * cost about one commit instead of eight. Waits while `gate` holds another transaction.
 */
function groupCommit(connection: SyncRunner, gate: Gate): <T>(work: (tx: SyncRunner) => T) => Promise<T> {
  let queue: QueuedUnit[] = [];
  let scheduled = false;
  const flush = () => {
    if (gate.open) {
      gate.open.then(flush, flush);
      return;
    }
    scheduled = false;
    const units = queue;
    queue = [];
    runGroup(connection, units);
  };
  return <T>(work: (tx: SyncRunner) => T) =>
    new Promise<T>((resolve, reject) => {
      queue.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    });
}

/** BEGIN IMMEDIATE, each unit in its savepoint, COMMIT, all in one synchronous call; then settles the units. */
function runGroup(connection: SyncRunner, units: QueuedUnit[]): void {
  const outcomes: { failed: boolean; value: unknown }[] = [];
  try {
    connection.run(BEGIN);
  } catch (error) {
    for (const unit of units) unit.reject(error);
    return;
  }
  try {
    for (const unit of units) {
      connection.run(SAVEPOINT);
      try {
        outcomes.push({ failed: false, value: unit.work(connection) });
      } catch (error) {
        // This unit's statements are undone; the others' stay.
        connection.run(ROLLBACK_UNIT);
        outcomes.push({ failed: true, value: error });
      }
      connection.run(RELEASE);
    }
    connection.run(COMMIT);
  } catch (error) {
    // The transaction itself failed (the commit, or an error that ended it): nothing was written.
    try {
      connection.run(ROLLBACK);
    } catch {
      // Already rolled back by SQLite.
    }
    for (const unit of units) unit.reject(error);
    return;
  }
  for (const [i, unit] of units.entries()) {
    const { failed, value } = outcomes[i];
    if (failed) unit.reject(value);
    else unit.resolve(value);
  }
}
