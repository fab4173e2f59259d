import { sql } from "drizzle-orm";
import type { Bound, Statement } from "../saver/statements.js";
import type { Executor, Row, Runner, SyncRunner, TransactionStyle } from "./executor.js";
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
  gate?: Gate,
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
      transactionNow: synchronous && ((work) => ({ result: transactionNow(synchronous, work) })),
    },
    gate,
  );
}

/** BEGIN IMMEDIATE, `work`, COMMIT, all in one synchronous call: nothing can interleave. */
function transactionNow<T>(connection: SyncRunner, work: (tx: SyncRunner) => T): T {
  connection.run(BEGIN);
  try {
    const result = work(connection);
    connection.run(COMMIT);
    return result;
  } catch (error) {
    try {
      connection.run(ROLLBACK);
    } catch {
      // The work's own error matters, not a failed rollback's.
    }
    throw error;
  }
}
