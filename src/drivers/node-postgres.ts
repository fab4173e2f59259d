/**
 * The executor for node-postgres (`pg`): a `Pool` as it is, a single `Client` one statement
 * or transaction at a time.
 */
import type { Executor, ExecutorOptions } from "../sql/executor.js";
import { clientOf } from "./drizzle-internals.js";
import { oneAtATime } from "./one-connection.js";
import { pgSessionExecutor } from "./pg-session.js";

/**
 * node-postgres (`pg`). A `Pool` gives each transaction a connection of its own; a
 * single `Client` runs everything on one, in turn, whoever shares it.
 */
export function nodePostgresExecutor(db: unknown, options: ExecutorOptions = {}): Executor {
  const executor = pgSessionExecutor(db, "pg", options);
  const client = clientOf(db);
  // A pg.Pool counts its clients; a pg.Client has no such field.
  const isPool = typeof (client as { totalCount?: unknown } | undefined)?.totalCount === "number";
  return isPool ? executor : oneAtATime(executor, client ?? db);
}
