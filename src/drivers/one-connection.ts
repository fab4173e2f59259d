import type { Executor } from "./executor.js";

/**
 * For a driver whose transactions run on the very connection everything else uses
 * (a SQLite database, a node-postgres `Client`, a mysql2 `Connection`): while a
 * transaction is open, every other statement of this executor waits for it, since
 * it would otherwise run inside it (and be rolled back with it), and a second
 * transaction would fail to begin.
 */
export function oneConnection(executor: Executor): Executor {
  let open: Promise<void> | undefined;
  /** Runs `work` now when no transaction is open, else once none is (checked again each time one ends). */
  const whenIdle = <T>(work: () => Promise<T>): Promise<T> => (open ? open.then(() => whenIdle(work)) : work());
  return {
    ...executor,
    // With no transaction open, a synchronous driver runs the statement right away.
    all: (statement) => whenIdle(() => executor.all(statement)),
    run: (statement) => whenIdle(() => executor.run(statement)),
    script: (statement) => whenIdle(() => executor.script(statement)),
    async transaction(work) {
      while (open) await open;
      // No await between the check above and taking the connection below.
      let close = () => {};
      open = new Promise((resolve) => {
        close = resolve;
      });
      try {
        return await executor.transaction(work);
      } finally {
        open = undefined;
        close();
      }
    },
  };
}
