/**
 * The executor for node-postgres (`pg`): a `Pool` as it is, a single `Client` gated so its
 * transactions exclude its other statements.
 */
import type { Executor, ExecutorOptions } from "../sql/executor.js";
import { clientOf } from "./drizzle-internals.js";
import { oneConnection } from "./one-connection.js";
import { pgSessionExecutor } from "./pg-session.js";

/**
 * node-postgres (`pg`). A `Pool` gives each transaction a connection of its own; a
 * single `Client` runs everything on one, so its transactions exclude other statements.
 */
export function nodePostgresExecutor(db: unknown, options: ExecutorOptions = {}): Executor {
  const executor = pgSessionExecutor(db, "pg", options);
  // A pg.Pool counts its clients; a pg.Client has no such field.
  const isPool = typeof (clientOf(db) as { totalCount?: unknown } | undefined)?.totalCount === "number";
  return isPool ? executor : oneConnection(executor);
}
