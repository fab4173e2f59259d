/**
 * Executors over one connection that several users share: statements wait while a
 * transaction is open on it (SQLite, libSQL), or run one at a time in call order (a
 * node-postgres `Client`, a mysql2 `Connection`).
 */
import type { Executor } from "../sql/executor.js";

/** The transaction open on a connection (or on a database file, see better-sqlite3.ts), if any. */
export interface Gate {
  open?: Promise<void>;
}

const gates = new WeakMap<object, Gate>();

/**
 * The gate of a connection, one per connection however many executors run on it: an
 * application may hand its one client to two savers, a saver and a store, an import.
 * Gates of their own would let one's statements into another's transaction.
 */
export function gateOf(connection: unknown): Gate {
  if (typeof connection !== "object" || connection === null) return {};
  let gate = gates.get(connection);
  if (!gate) {
    gate = {};
    gates.set(connection, gate);
  }
  return gate;
}

/**
 * For a driver whose transactions run on the very connection everything else uses
 * (a SQLite database, a libSQL client): while a
 * transaction is open, every other statement of this executor waits for it, since
 * it would otherwise run inside it (and be rolled back with it), and a second
 * transaction would fail to begin. `gate`: the connection's, from {@link gateOf}.
 */
export function oneConnection(executor: Executor, gate: Gate): Executor {
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

/** The end of the work queued on each network connection (see oneAtATime). */
const queues = new WeakMap<object, { tail: Promise<unknown> }>();

/**
 * For a single network connection (a node-postgres `Client`, a mysql2 `Connection`):
 * its statements and transactions one at a time, in call order, whoever calls them (two
 * savers, a saver and a store, an import take turns on the connection). A statement
 * sent while a transaction is open would run inside it and be rolled back with it, and
 * node-postgres deprecates sending a query while another runs.
 */
export function oneAtATime(executor: Executor, connection: unknown): Executor {
  const key = typeof connection === "object" && connection !== null ? connection : {};
  const queue = queues.get(key) ?? { tail: Promise.resolve() };
  queues.set(key, queue);
  const inTurn = <T>(work: () => Promise<T>): Promise<T> => {
    const run = queue.tail.then(work);
    queue.tail = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  };
  return {
    ...executor,
    all: (statement) => inTurn(() => executor.all(statement)),
    run: (statement) => inTurn(() => executor.run(statement)),
    script: (statement) => inTurn(() => executor.script(statement)),
    transaction: (work) => inTurn(() => executor.transaction(work)),
  };
}
