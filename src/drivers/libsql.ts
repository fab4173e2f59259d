/**
 * The executor for libSQL (@libsql/client, local `file:` databases): statements and write
 * transactions through the client's public API.
 */
import type { Executor, ExecutorOptions, Row, Runner } from "../sql/executor.js";
import type { Statement } from "../sql/statements.js";
import { clientOf, compilerFor, loggerOf, privateApiAvailable } from "./drizzle-internals.js";
import { gateOf, oneConnection } from "./one-connection.js";
import { publicLibsqlExecutor } from "./public-api.js";

type LibsqlValue = null | string | number | bigint | ArrayBuffer | Uint8Array | boolean;

interface LibsqlResult {
  columns: string[];
  rows: ArrayLike<unknown>[];
  rowsAffected: number;
}

/** The slice of @libsql/client's public API used here. */
interface LibsqlExecute {
  execute(statement: { sql: string; args: LibsqlValue[] }): Promise<LibsqlResult>;
}
interface LibsqlTransaction extends LibsqlExecute {
  commit(): Promise<void>;
  rollback(): Promise<void>;
  close(): void;
}
interface LibsqlClient extends LibsqlExecute {
  transaction(mode: "write"): Promise<LibsqlTransaction>;
}

/** Plain rows by column name; BLOBs come back as ArrayBuffers and become Buffers. */
function rowsOf({ columns, rows }: LibsqlResult): Row[] {
  return rows.map((row) => {
    const plain: Row = {};
    columns.forEach((column, i) => {
      const value = row[i];
      plain[column] = value instanceof ArrayBuffer ? Buffer.from(value) : value;
    });
    return plain;
  });
}

/**
 * libSQL through @libsql/client (local `file:` databases). Statements and
 * transactions go through the client's public API: a transaction is a real
 * asynchronous one (`transaction("write")`, BEGIN IMMEDIATE on a connection of its
 * own). This process runs one at a time; other processes wait as long as the client's
 * `timeout` (SQLite's busy timeout) allows.
 */
export function libsqlExecutor(db: unknown, options: ExecutorOptions = {}): Executor {
  if (!privateApiAvailable(db)) return publicLibsqlExecutor(db);
  const client = clientOf(db) as LibsqlClient;
  const compiler = compilerFor(db, options);
  const logger = loggerOf(db);
  const on = (target: LibsqlExecute): Runner => {
    const execute = (statement: Statement) => {
      const query = compiler.compile(statement);
      logger?.logQuery(query.sql, query.params);
      return target.execute({ sql: query.sql, args: query.params as LibsqlValue[] });
    };
    return {
      all: async (statement) => rowsOf(await execute(statement)),
      run: async (statement) => (await execute(statement)).rowsAffected,
      script: async (statement) => {
        await execute(statement);
      },
    };
  };
  return oneConnection(
    {
      driver: "@libsql/client",
      transactions: "async",
      compile: (statement) => compiler.compile(statement),
      ...on(client),
      async transaction(work) {
        const tx = await client.transaction("write");
        try {
          const result = await work(on(tx));
          await tx.commit();
          return result;
        } catch (error) {
          // The work's own error matters, not a failed rollback's.
          await tx.rollback().catch(() => {});
          throw error;
        } finally {
          tx.close();
        }
      },
    },
    gateOf(client),
  );
}
