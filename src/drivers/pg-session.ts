/**
 * Runs statements of any drizzle PostgreSQL database through drizzle's session,
 * unprepared; the PostgreSQL executors build on it.
 */
import type { SQL } from "drizzle-orm";
import type { Executor, ExecutorOptions, Runner } from "../sql/executor.js";
import type { CompiledQuery, Statement } from "../sql/statements.js";
import { compilerFor, privateApiAvailable, sessionOf } from "./drizzle-internals.js";
import { changedRows, rowsOf } from "./pg-results.js";
import { publicPgExecutor } from "./public-api.js";

/** The slice of drizzle's PostgreSQL session used to run compiled text. */
interface PgSession {
  prepareQuery(
    query: CompiledQuery,
    fields: undefined,
    name: undefined,
    arrayMode: boolean,
  ): { execute(): Promise<unknown> };
}

interface PgDrizzle {
  execute(statement: SQL): Promise<unknown>;
  transaction<T>(work: (tx: PgDrizzle) => Promise<T>): Promise<T>;
}

/**
 * Any drizzle PostgreSQL database: statements run through drizzle's session
 * (unnamed, unprepared), transactions through `db.transaction`.
 */
export function pgSessionExecutor(db: unknown, driver: string, options: ExecutorOptions = {}): Executor {
  if (!privateApiAvailable(db)) return publicPgExecutor(db, driver, options);
  const compiler = compilerFor(db, options);
  const on = (target: PgDrizzle): Runner => {
    const execute = (statement: Statement) =>
      sessionOf<PgSession>(target).prepareQuery(compiler.compile(statement), undefined, undefined, false).execute();
    return {
      all: async (statement) => rowsOf(await execute(statement)),
      run: async (statement) => changedRows(await execute(statement)),
      script: async (statement) => {
        await target.execute(statement);
      },
    };
  };
  const database = db as PgDrizzle;
  return {
    driver,
    transactions: "async",
    compile: (statement) => compiler.compile(statement),
    ...on(database),
    transaction: (work) => database.transaction((tx) => work(on(tx))),
  };
}
