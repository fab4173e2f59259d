/**
 * The executor for postgres.js: statements sent as named prepared statements, and a
 * statement outside a transaction run once more when its pooled connection was dead.
 */
import { UnsupportedDriverError } from "../errors.js";
import type { Executor, ExecutorOptions, Runner } from "../sql/executor.js";
import type { Statement } from "../sql/statements.js";
import { clientOf, compilerFor, loggerOf, privateApiAvailable } from "./drizzle-internals.js";
import { changedRows, rowsOf } from "./pg-results.js";
import { pgSessionExecutor } from "./pg-session.js";
import { publicPgExecutor } from "./public-api.js";

/** The slice of a postgres.js client the prepared path uses. */
interface PostgresJsClient {
  unsafe(query: string, params?: unknown[], options?: { prepare: boolean }): Promise<unknown>;
  begin<T>(work: (tx: PostgresJsClient) => Promise<T>): Promise<T>;
}

/** The client's `transform` option, as postgres.js keeps it: one `from` (results) and `to` per kind. */
interface PostgresJsTransform {
  column?: { from?: unknown };
  value?: { from?: unknown };
  row?: { from?: unknown };
}

/**
 * Refuses a client whose `transform` rewrites results: the column names (`postgres.camel`
 * and the like) and JSON values the saver reads would come back renamed, and a tuple
 * would lose its ids and metadata keys without any error. The connections read the
 * option as they are made, so no statement of ours can do without it. Transforms of what
 * is sent (`undefined`, `column.to`) change nothing here.
 */
function refuseResultTransforms(client: unknown): void {
  const transform = (client as { options?: { transform?: PostgresJsTransform } } | undefined)?.options?.transform;
  const rewritten = (["column", "value", "row"] as const).filter((kind) => transform?.[kind]?.from);
  if (rewritten.length === 0) return;
  throw new UnsupportedDriverError(
    `this postgres.js client transforms the ${rewritten.join(", ")}s of results (its transform option, such as postgres.camel), which would rename what the saver reads; give the saver and store a client without it: postgres(url) next to yours`,
  );
}

/**
 * postgres.js. drizzle's `execute` sends each statement unprepared, which costs
 * postgres.js a describe round trip and the server a fresh parse and plan per call;
 * here they go as named prepared statements instead, kept per connection (a client
 * created with `prepare: false`, as for PgBouncer, still wins). drizzle's logger
 * sees them all. Without `unsafe`/`begin` on the client, drizzle's session is used.
 */
export function postgresJsExecutor(db: unknown, options: ExecutorOptions = {}): Executor {
  refuseResultTransforms(clientOf(db));
  if (!privateApiAvailable(db)) return publicPgExecutor(db, "postgres", options);
  const client = clientOf(db) as Partial<PostgresJsClient> | undefined;
  if (typeof client?.unsafe !== "function" || typeof client.begin !== "function") {
    return pgSessionExecutor(db, "postgres", options);
  }
  const compiler = compilerFor(db, options);
  const logger = loggerOf(db);
  const on = (target: PostgresJsClient): Runner => {
    const execute = (statement: Statement) => {
      const query = compiler.compile(statement);
      logger?.logQuery(query.sql, query.params);
      return target.unsafe(query.sql, query.params, { prepare: true });
    };
    return {
      all: async (statement) => rowsOf(await execute(statement)),
      run: async (statement) => changedRows(await execute(statement)),
      script: async (statement) => {
        const query = compiler.compile(statement);
        logger?.logQuery(query.sql, query.params);
        await target.unsafe(query.sql, query.params);
      },
    };
  };
  const postgresJs = client as PostgresJsClient;
  const pooled = on(postgresJs);
  return {
    driver: "postgres",
    transactions: "async",
    compile: (statement) => compiler.compile(statement),
    all: (statement) => onceMoreIfConnectionDied(() => pooled.all(statement)),
    run: (statement) => onceMoreIfConnectionDied(() => pooled.run(statement)),
    script: pooled.script,
    transaction: (work) => postgresJs.begin((tx) => work(on(tx))),
  };
}

/** Errors of a connection whose server session was gone before the statement ran through it. */
const DEAD_CONNECTION = new Set(["57P01", "57P02", "CONNECTION_CLOSED", "CONNECTION_DESTROYED", "ECONNRESET"]);

/**
 * A statement outside a transaction runs once more, on another of the pool's
 * connections, when the one it was sent on turned out to be dead: postgres.js can hand
 * out a pooled connection whose session an administrator or a restart ended while it
 * was idle, and the statement then fails with that session's termination. Every such
 * statement of the saver is one autocommitted unit whose repetition changes nothing
 * more (upserts, deletes, reads), so running it again is safe.
 */
async function onceMoreIfConnectionDied<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (!DEAD_CONNECTION.has(String((error as { code?: unknown } | null)?.code))) throw error;
    return run();
  }
}
