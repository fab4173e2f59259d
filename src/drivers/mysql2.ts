/**
 * The executor for mysql2, pool or single connection: statements through drizzle's session
 * with their values written as literals no sql_mode changes, transactions at READ COMMITTED.
 */
import { type SQL, sql } from "drizzle-orm";
import { UnsupportedDriverError } from "../errors.js";
import type { Executor, ExecutorOptions, Row, Runner } from "../sql/executor.js";
import { inlineParameters } from "../sql/mysql-literals.js";
import type { CompiledQuery, Statement } from "../sql/statements.js";
import { clientOf, compilerFor, privateApiAvailable, sessionOf } from "./drizzle-internals.js";
import { oneAtATime } from "./one-connection.js";
import { MYSQL_TRANSACTION, publicMysqlExecutor } from "./public-api.js";

/** The slice of drizzle's MySQL session used to run compiled text. */
interface MySqlSession {
  prepareQuery(query: CompiledQuery, fields: undefined): { execute(): Promise<unknown> };
}

interface MySqlDrizzle {
  execute(statement: SQL): Promise<unknown>;
  transaction<T>(work: (tx: MySqlDrizzle) => Promise<T>, config?: { isolationLevel: "read committed" }): Promise<T>;
}

/**
 * Pools whose every connection was set to READ COMMITTED as it opened (`fromUrl`'s): their
 * transactions need no SET TRANSACTION, one round trip less per write. A pool handed to
 * the saver keeps its own defaults, and each transaction sets its level.
 */
export const readCommittedPools = new WeakSet<object>();

/** A mysql2 client's settings: a connection's `config`, a pool's `config.connectionConfig`; a promise pool wraps its `pool`. */
interface MySql2Config {
  rowsAsArray?: unknown;
  connectionConfig?: { rowsAsArray?: unknown };
}

/**
 * Refuses a client made with `rowsAsArray: true`: every row, the saver's too, would come
 * back as an array, and the saver reads columns by name (tuples would fail to read,
 * thread searches answer nulls).
 */
function refuseRowsAsArrays(client: unknown): void {
  const { config, pool } = (client ?? {}) as { config?: MySql2Config; pool?: { config?: MySql2Config } };
  const settings = pool?.config ?? config;
  if (!(settings?.rowsAsArray ?? settings?.connectionConfig?.rowsAsArray)) return;
  throw new UnsupportedDriverError(
    "this mysql2 client was made with rowsAsArray: true, which would return the saver's rows as arrays; give the saver and store a pool or connection without it",
  );
}

/**
 * mysql2, pool or single connection. Statements run through drizzle's session (its
 * logger and type casts apply), their values written as literals no sql_mode changes
 * (see mysql-literals.ts). On a pool a transaction pins a connection of its own;
 * a single connection runs everything, one statement or transaction at a time.
 */
export function mysql2Executor(db: unknown, options: ExecutorOptions = {}): Executor {
  refuseRowsAsArrays(clientOf(db));
  const executor = privateApiAvailable(db) ? mysql2PoolExecutor(db, options) : publicMysqlExecutor(db, options);
  // drizzle tells a pool by the same test.
  const client = clientOf(db);
  const isPool = typeof client === "object" && client !== null && "getConnection" in client;
  return isPool ? executor : oneAtATime(executor, client ?? db);
}

function mysql2PoolExecutor(db: unknown, options: ExecutorOptions): Executor {
  const compiler = compilerFor(db, options);
  const client = clientOf(db);
  const transactionConfig =
    typeof client === "object" && client !== null && readCommittedPools.has(client) ? undefined : MYSQL_TRANSACTION;
  const on = (target: MySqlDrizzle, onFailure?: (error: unknown) => void): Runner => {
    const execute = async (statement: Statement) => {
      try {
        const [result] = (await sessionOf<MySqlSession>(target)
          .prepareQuery(inlineParameters(compiler.compile(statement)), undefined)
          .execute()) as [unknown];
        return result;
      } catch (error) {
        onFailure?.(error);
        throw error;
      }
    };
    return {
      all: async (statement) => (await execute(statement)) as Row[],
      run: async (statement) => Number(((await execute(statement)) as { affectedRows?: number }).affectedRows ?? 0),
      script: async (statement) => {
        try {
          await target.execute(sql.raw(inlineParameters(compiler.compile(statement)).sql));
        } catch (error) {
          onFailure?.(error);
          throw error;
        }
      },
    };
  };
  const database = db as MySqlDrizzle;
  return {
    driver: "mysql2",
    transactions: "async",
    compile: (statement) => compiler.compile(statement),
    ...on(database),
    /**
     * Keeps the statement's own error when the server dropped the connection:
     * drizzle's failed ROLLBACK would hide it.
     */
    async transaction(work) {
      let failure: unknown;
      try {
        return await database.transaction(
          (tx) =>
            work(
              on(tx, (error) => {
                failure = error;
              }),
            ),
          transactionConfig,
        );
      } catch (error) {
        throw failure ?? error;
      }
    },
  };
}
