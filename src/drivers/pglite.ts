/** The executor for PGlite, PostgreSQL in-process. */
import type { Executor, ExecutorOptions } from "../sql/executor.js";
import { pgSessionExecutor } from "./pg-session.js";

/**
 * PGlite, PostgreSQL in-process. It already runs a query outside a transaction only
 * once the open transaction has ended, so no gate of ours is needed.
 */
export function pgliteExecutor(db: unknown, options: ExecutorOptions = {}): Executor {
  return pgSessionExecutor(db, "@electric-sql/pglite", options);
}
