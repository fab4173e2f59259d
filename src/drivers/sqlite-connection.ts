import { sql } from "drizzle-orm";
import type { Statement } from "../saver/statements.js";
import type { Executor, Row, Runner, TransactionStyle } from "./executor.js";

/** Runs statements on the one connection of a SQLite database, as it comes. */
export interface SqliteConnection {
  all(statement: Statement): Row[] | Promise<Row[]>;
  run(statement: Statement): number | Promise<number>;
}

/** Whether a transaction is open, and resolves when it ends. */
interface TransactionLock {
  open?: Promise<void>;
}

/**
 * Shared by every synchronous connection of the process. Such a driver waits for another
 * connection's lock inside SQLite's busy handler, which blocks the whole thread: a
 * transaction open on one connection (between two awaits) could then never finish while
 * another connection of the same process waits, and the wait ends in "database is locked".
 */
const synchronousConnections: TransactionLock = {};

/**
 * An executor over a single SQLite connection. A transaction is BEGIN IMMEDIATE ...
 * COMMIT on that connection: the write lock is taken up front, so other processes
 * wait (busy_timeout) instead of failing on a lock upgrade. While one is open, every
 * other statement of this process waits for it, since on the same connection it
 * would otherwise run inside it (and be rolled back with it).
 */
export function serialSqliteExecutor(
  driver: string,
  transactions: TransactionStyle,
  connection: SqliteConnection,
  compile: Executor["compile"],
): Executor {
  const lock: TransactionLock = transactions === "sync" ? synchronousConnections : {};
  const inside: Runner = {
    all: async (statement) => connection.all(statement),
    run: async (statement) => connection.run(statement),
    script: async (statement) => {
      await connection.run(statement);
    },
  };
  /** Runs `work` now when no transaction is open, else once none is (checked again each time one ends). */
  const whenIdle = <T>(work: () => Promise<T>): Promise<T> =>
    lock.open ? lock.open.then(() => whenIdle(work)) : work();
  return {
    driver,
    transactions,
    compile,
    // With no transaction open, a synchronous driver runs the statement right away.
    all: (statement) => whenIdle(() => inside.all(statement)),
    run: (statement) => whenIdle(() => inside.run(statement)),
    script: (statement) => whenIdle(() => inside.script(statement)),
    async transaction(work) {
      while (lock.open) await lock.open;
      // No await between the check above and taking the connection below.
      let close = () => {};
      lock.open = new Promise((resolve) => {
        close = resolve;
      });
      try {
        await connection.run(sql`begin immediate`);
        try {
          const result = await work(inside);
          await connection.run(sql`commit`);
          return result;
        } catch (error) {
          await Promise.resolve(connection.run(sql`rollback`)).catch(() => {});
          throw error;
        }
      } finally {
        lock.open = undefined;
        close();
      }
    },
  };
}
