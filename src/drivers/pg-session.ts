import type { SQL } from "drizzle-orm";
import type { CompiledQuery, Statement } from "../saver/statements.js";
import { compilerFor, privateApiAvailable, sessionOf } from "./drizzle-internals.js";
import type { Executor, ExecutorOptions, Row, Runner } from "./executor.js";
import { publicPgExecutor } from "./public-api.js";

/** Rows of a PostgreSQL result, whatever the driver wraps them in. */
export function rowsOf(result: unknown): Row[] {
  // postgres.js returns the rows themselves; node-postgres and PGlite wrap them in { rows }.
  const rows: unknown = Array.isArray(result) ? result : (result as { rows?: unknown } | undefined)?.rows;
  // Seen while connections were being killed: never read a partial answer as data.
  // Indexes, not some(): a result cut short can be a sparse array, whose holes some() skips.
  if (!Array.isArray(rows) || Array.from(rows).some((row) => row === null || typeof row !== "object")) {
    throw new Error("PostgreSQL connection lost: the driver returned an incomplete result");
  }
  return rows as Row[];
}

/** Rows a PostgreSQL statement changed, whatever the driver calls the count. */
export function changedRows(result: unknown): number {
  // postgres.js puts the count on the result array; node-postgres has rowCount, PGlite affectedRows.
  const { count, rowCount, affectedRows } = result as { count?: number; rowCount?: number; affectedRows?: number };
  return Number(count ?? rowCount ?? affectedRows ?? 0);
}

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
