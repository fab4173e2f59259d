/**
 * The executor for better-sqlite3: statements kept prepared per connection, and one gate
 * per database file so this process's connections never wait on each other's lock.
 */
import { resolve } from "node:path";
import type { Executor, ExecutorOptions, Row, SyncRunner } from "../sql/executor.js";
import { LruCache } from "../sql/statements.js";
import { clientOf, compilerFor, loggerOf, privateApiAvailable } from "./drizzle-internals.js";
import { gateOf as connectionGate, type Gate } from "./one-connection.js";
import { publicBetterSqliteExecutor } from "./public-api.js";
import { serialSqliteExecutor } from "./sqlite-connection.js";
import { type WalDatabase, walCheckpointerOf } from "./wal-checkpointer.js";

/** The slice of a better-sqlite3 database the cached path uses (its file, and what the checkpointer reads). */
interface BetterSqliteDatabase extends WalDatabase {
  prepare(source: string): {
    all(...params: unknown[]): unknown[];
    run(...params: unknown[]): { changes: number };
  };
  loadExtension(path: string): void;
}

/**
 * One gate per database file for all better-sqlite3 connections of this process. The
 * driver blocks the whole process while it waits for a lock (busy_timeout): a
 * connection waiting so for the lock another connection of this process holds across
 * an await would wait forever, as the holder cannot run. Waiting at this gate instead
 * lets the holder finish.
 */
const fileGates = new Map<string, Gate>();

function gateOf(database: BetterSqliteDatabase): Gate {
  // Each in-memory connection is a database of its own: its gate is the connection's.
  if (database.memory) return connectionGate(database);
  const file = resolve(database.name);
  let gate = fileGates.get(file);
  if (!gate) {
    gate = {};
    fileGates.set(file, gate);
  }
  return gate;
}

/**
 * better-sqlite3. drizzle compiles every statement afresh (`prepare` per call); the
 * saver sends the same few shapes again and again, so they stay compiled here (200
 * per connection). The driver is synchronous: a statement runs when it is called.
 */
export function betterSqliteExecutor(db: unknown, options: ExecutorOptions = {}): Executor {
  const client = clientOf(db) as Partial<BetterSqliteDatabase> | undefined;
  // No better-sqlite3 client to keep statements on: drizzle's own path (its session, its logger).
  if (typeof client?.prepare !== "function") return publicBetterSqliteExecutor(db, connectionGate(db));
  const database = client as BetterSqliteDatabase;
  if (!privateApiAvailable(db)) return publicBetterSqliteExecutor(db, gateOf(database));
  const compiler = compilerFor(db, options);
  const logger = loggerOf(db);
  const prepared = new LruCache<ReturnType<BetterSqliteDatabase["prepare"]>>(200);
  const checkpointer = options.backgroundCheckpoints === false ? undefined : walCheckpointerOf(database);
  const compiled = (statement: Parameters<Executor["compile"]>[0]) => {
    const query = compiler.compile(statement);
    logger?.logQuery(query.sql, query.params);
    return { statement: prepared.get(query.sql, () => database.prepare(query.sql)), params: query.params };
  };
  const synchronous: SyncRunner = {
    all(input) {
      const { statement, params } = compiled(input);
      return statement.all(...params) as Row[];
    },
    run(input) {
      const { statement, params } = compiled(input);
      const changes = statement.run(...params).changes;
      checkpointer?.wrote();
      return changes;
    },
  };
  const executor = serialSqliteExecutor(
    "better-sqlite3",
    "sync",
    synchronous,
    (statement) => compiler.compile(statement),
    gateOf(database),
    synchronous,
  );
  return { ...executor, loadExtension: (path) => database.loadExtension(path) };
}
