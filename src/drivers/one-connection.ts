/**
 * Makes an executor's statements wait while a transaction is open on the one connection
 * they share (SQLite, a node-postgres `Client`, a mysql2 `Connection`).
 */
import type { Executor } from "../sql/executor.js";

/** The transaction open on a connection (or on a database file, see better-sqlite3.ts), if any. */
export interface Gate {
  open?: Promise<void>;
}

/**
 * For a driver whose transactions run on the very connection everything else uses
 * (a SQLite database, a node-postgres `Client`, a mysql2 `Connection`): while a
 * transaction is open, every other statement of this executor waits for it, since
 * it would otherwise run inside it (and be rolled back with it), and a second
 * transaction would fail to begin.
 */
export function oneConnection(executor: Executor, gate: Gate = {}): Executor {
  /** Runs `work` now when no transaction is open, else once none is (checked again each time one ends). */
  const whenIdle = <T>(work: () => Promise<T>): Promise<T> =>
    gate.open ? gate.open.then(() => whenIdle(work)) : work();
  return {
    ...executor,
    // With no transaction open, a synchronous driver runs the statement right away.
    all: (statement) => whenIdle(() => executor.all(statement)),
    run: (statement) => whenIdle(() => executor.run(statement)),
    script: (statement) => whenIdle(() => executor.script(statement)),
    async transaction(work) {
      while (gate.open) await gate.open;
      // No await between the check above and taking the connection below.
      let close = () => {};
      gate.open = new Promise((resolve) => {
        close = resolve;
      });
      try {
        return await executor.transaction(work);
      } finally {
        gate.open = undefined;
        close();
      }
    },
  };
}
