/**
 * Executors on drizzle's public API only (`execute`, `all`, `run`, `transaction`):
 * the fallback when a drizzle release no longer has the private parts the fast
 * executors use (see drizzle-internals.ts). Slower: every statement is compiled anew.
 */
import type { SQL } from "drizzle-orm";
import type { Executor, ExecutorOptions, Row, Runner } from "../sql/executor.js";
import { type CompiledQuery, filled, isBound, type Statement } from "../sql/statements.js";
import { type Gate, gateOf, oneConnection } from "./one-connection.js";
import { changedRows, rowsOf } from "./pg-results.js";
import { serialSqliteExecutor } from "./sqlite-connection.js";

/** Without drizzle's compiler the text is unknown; the values are what a size check needs. */
const valuesOnly = (statement: Statement): CompiledQuery => ({
  sql: "",
  params: isBound(statement) ? Object.values(statement.values) : [],
});

interface AsyncDrizzle {
  execute(statement: SQL): Promise<unknown>;
  transaction<T>(work: (tx: AsyncDrizzle) => Promise<T>, config?: typeof MYSQL_TRANSACTION): Promise<T>;
}

/**
 * Transactions run at READ COMMITTED, as on PostgreSQL. Under InnoDB's default,
 * REPEATABLE READ, a put's check for its own (absent) checkpoint key took a gap lock,
 * and puts to different threads whose keys fell in one gap deadlocked on their inserts.
 * SET TRANSACTION applies to the next transaction only: the connection's default stays.
 */
export const MYSQL_TRANSACTION = { isolationLevel: "read committed" } as const;

function asyncExecutor(
  db: unknown,
  driver: string,
  options: ExecutorOptions,
  read: (result: unknown) => { rows: Row[]; changed: number },
  transactionConfig?: typeof MYSQL_TRANSACTION,
): Executor {
  const on = (target: AsyncDrizzle): Runner => {
    const execute = async (statement: Statement) => read(await target.execute(filled(statement, options.derive)));
    return {
      all: async (statement) => (await execute(statement)).rows,
      run: async (statement) => (await execute(statement)).changed,
      script: async (statement) => {
        await target.execute(statement);
      },
    };
  };
  const database = db as AsyncDrizzle;
  return {
    driver,
    transactions: "async",
    compile: valuesOnly,
    ...on(database),
    transaction: (work) => database.transaction((tx) => work(on(tx)), transactionConfig),
  };
}

export function publicPgExecutor(db: unknown, driver: string, options: ExecutorOptions): Executor {
  return asyncExecutor(db, driver, options, (result) => ({
    rows: Array.isArray(result) || (result as { rows?: unknown })?.rows ? rowsOf(result) : [],
    changed: changedRows(result),
  }));
}

export function publicMysqlExecutor(db: unknown, options: ExecutorOptions): Executor {
  return asyncExecutor(
    db,
    "mysql2",
    options,
    (result) => {
      const [first] = result as [unknown];
      return {
        rows: Array.isArray(first) ? (first as Row[]) : [],
        changed: Number((first as { affectedRows?: number }).affectedRows ?? 0),
      };
    },
    MYSQL_TRANSACTION,
  );
}

/** BLOBs as Buffers, whatever the driver returns them as (libSQL: ArrayBuffer). */
const withBuffers = (rows: Row[]): Row[] =>
  rows.map((row) => {
    for (const [key, value] of Object.entries(row)) if (value instanceof ArrayBuffer) row[key] = Buffer.from(value);
    return row;
  });

interface SqliteDrizzle {
  all(statement: SQL): unknown;
  run(statement: SQL): unknown;
}

/** better-sqlite3 through `db.all`/`db.run`, its transactions as in sqlite-connection.ts. */
export function publicBetterSqliteExecutor(db: unknown, gate: Gate): Executor {
  const database = db as SqliteDrizzle;
  const changes = (result: unknown) => {
    const { changes: count, rowsAffected } = (result ?? {}) as { changes?: number; rowsAffected?: number };
    return Number(count ?? rowsAffected ?? 0);
  };
  return serialSqliteExecutor(
    "better-sqlite3",
    "sync",
    {
      all: (statement) => database.all(filled(statement)) as Row[],
      run: (statement) => changes(database.run(filled(statement))),
    },
    valuesOnly,
    gate,
  );
}

interface AsyncSqliteDrizzle {
  all(statement: SQL): Promise<Row[]>;
  run(statement: SQL): Promise<{ rowsAffected: number }>;
  transaction<T>(work: (tx: AsyncSqliteDrizzle) => Promise<T>): Promise<T>;
}

/** libSQL through `db.all`/`db.run` and `db.transaction` (a connection of its own). */
export function publicLibsqlExecutor(db: unknown): Executor {
  const on = (target: AsyncSqliteDrizzle): Runner => ({
    all: async (statement) => withBuffers(await target.all(filled(statement))),
    run: async (statement) => (await target.run(filled(statement))).rowsAffected,
    script: async (statement) => {
      await target.run(statement);
    },
  });
  const database = db as AsyncSqliteDrizzle;
  return oneConnection(
    {
      driver: "@libsql/client",
      transactions: "async",
      compile: valuesOnly,
      ...on(database),
      transaction: (work) => database.transaction((tx) => work(on(tx))),
    },
    gateOf((db as { $client?: unknown }).$client ?? db),
  );
}
