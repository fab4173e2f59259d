import type { CompiledQuery } from "../saver/statements.js";
import { compilerFor, sessionOf } from "./drizzle-internals.js";
import type { Executor, ExecutorOptions, Row } from "./executor.js";
import { serialSqliteExecutor } from "./sqlite-connection.js";

/** The slice of drizzle's SQLite session used to run compiled text. */
interface SqliteSession {
  prepareQuery(
    query: CompiledQuery,
    fields: undefined,
    executeMethod: "all" | "run",
    arrayMode: boolean,
  ): { all(): unknown; run(): unknown };
}

/** Any drizzle SQLite database with one connection: statements through drizzle's session. */
export function sqliteSessionExecutor(db: unknown, driver: string, options: ExecutorOptions = {}): Executor {
  const compiler = compilerFor(db, options);
  const session = sessionOf<SqliteSession>(db);
  const prepare = (statement: Parameters<Executor["compile"]>[0], method: "all" | "run") =>
    session.prepareQuery(compiler.compile(statement), undefined, method, false);
  return serialSqliteExecutor(
    driver,
    "sync",
    {
      all: (statement) => prepare(statement, "all").all() as Row[],
      run: (statement) => (prepare(statement, "run").run() as { changes: number }).changes,
    },
    (statement) => compiler.compile(statement),
  );
}
