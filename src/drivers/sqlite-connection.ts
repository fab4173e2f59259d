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
  gate: Gate,
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

/**
 * The units in one transaction (BEGIN IMMEDIATE ... COMMIT), in one synchronous call; then
 * settles them. They first run back to back, with no savepoint: within a savepoint SQLite
 * copies each page a statement changes to a journal first, which cost a group of puts
 * more than its commit, and units almost never fail. When one does, the transaction is
 * rolled back and the group runs again, each unit in its own savepoint, so the failed
 * unit alone is undone (a lone unit's failure is its transaction's). The units are SQL
 * only: run again, they do the same.
 */
function runGroup(connection: SyncRunner, units: QueuedUnit[]): void {
  let unitFailed = false;
  const together = (): Outcome[] =>
    units.map((unit) => {
      try {
        return { failed: false, value: unit.work(connection) };
      } catch (error) {
        unitFailed = units.length > 1;
        throw error;
      }
    });
  let outcomes: Outcome[];
  try {
    outcomes = inTransaction(connection, together);
  } catch (error) {
    if (!unitFailed) {
      rejectAll(units, error);
      return;
    }
    try {
      outcomes = inTransaction(connection, () => runApart(connection, units));
    } catch (again) {
      rejectAll(units, again);
      return;
    }
  }
  for (const [i, unit] of units.entries()) {
    const { failed, value } = outcomes[i];
    if (failed) unit.reject(value);
    else unit.resolve(value);
  }
}

interface Outcome {
  failed: boolean;
  value: unknown;
}

/**
 * BEGIN IMMEDIATE, `work`, COMMIT. When the work or the commit throws, the transaction is
 * rolled back (nothing written) and the error rethrown; when BEGIN throws, nothing began.
 */
function inTransaction<T>(connection: SyncRunner, work: () => T): T {
  connection.run(BEGIN);
  try {
    const result = work();
    connection.run(COMMIT);
    return result;
  } catch (error) {
    try {
      connection.run(ROLLBACK);
    } catch {
      // Already rolled back by SQLite (an error that ends the transaction).
    }
    throw error;
  }
}

function rejectAll(units: QueuedUnit[], error: unknown): void {
  for (const unit of units) unit.reject(error);
}

/** Each unit in its own savepoint: one that throws is undone alone, the others' statements stay. */
function runApart(connection: SyncRunner, units: QueuedUnit[]): Outcome[] {
  const outcomes: Outcome[] = [];
  for (const unit of units) {
    connection.run(SAVEPOINT);
    try {
      outcomes.push({ failed: false, value: unit.work(connection) });
    } catch (error) {
      connection.run(ROLLBACK_UNIT);
      outcomes.push({ failed: true, value: error });
    }
    connection.run(RELEASE);
  }
  return outcomes;
}
