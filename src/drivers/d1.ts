/**
 * The executor for Cloudflare D1: statements through the binding, kept within D1's 100
 * parameters, and atomic units as batches, since D1 has no interactive transactions.
 */
import type { SQL } from "drizzle-orm";
import { UnsupportedDriverError } from "../errors.js";
import type { Executor, ExecutorOptions, Row } from "../sql/executor.js";
import { type CompiledQuery, filled, isBound, LruCache, type Statement } from "../sql/statements.js";
import { clientOf, compilerFor, loggerOf, privateApiAvailable, type QueryLogger } from "./drizzle-internals.js";

export const D1_DRIVER = "Cloudflare D1";

/** The slice of a D1 binding (`D1Database`) used here. */
interface D1Statement {
  bind(...values: unknown[]): D1Statement;
  all(): Promise<D1Result>;
  run(): Promise<D1Result>;
}
interface D1Result {
  results?: Row[];
  meta?: { changes?: number };
}
interface D1Database {
  prepare(query: string): D1Statement;
  batch(statements: D1Statement[]): Promise<D1Result[]>;
}

/** D1 returns a BLOB as an array of bytes (or an ArrayBuffer): as a Buffer here. */
function rowsOf(result: D1Result): Row[] {
  return (result.results ?? []).map((row) => {
    const plain: Row = {};
    for (const [column, value] of Object.entries(row)) {
      plain[column] =
        Array.isArray(value) || value instanceof ArrayBuffer || value instanceof Uint8Array
          ? Buffer.from(value as ArrayLike<number>)
          : value;
    }
    return plain;
  });
}

const changesOf = (result: D1Result) => Number(result.meta?.changes ?? 0);

/**
 * D1 binds at most 100 parameters per statement, and a statement's text is at most
 * 100,000 bytes (developers.cloudflare.com/d1/platform/limits).
 */
const D1_MAX_PARAMETERS = 100;
const D1_MAX_STATEMENT_BYTES = 100_000;

/** Quoted identifiers and literals, comments, or a `?` placeholder of the statement's own text. */
const TOKENS = /'(?:[^']|'')*'|"(?:[^"]|"")*"|`(?:[^`]|``)*`|\[[^\]]*\]|--[^\n]*|\/\*[\s\S]*?\*\/|\?/g;

/** A value as an SQLite literal: text quoted (as bytes when it holds a NUL, which would end the text), bytes in hex. */
function sqliteLiteral(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  switch (typeof value) {
    case "string":
      return value.includes("\0")
        ? `cast(X'${Buffer.from(value, "utf8").toString("hex")}' as text)`
        : `'${value.replaceAll("'", "''")}'`;
    case "number":
      if (!Number.isFinite(value)) throw new TypeError(`cannot send ${value} to D1`);
      // In parentheses when negative: after a "-" of the text, "--5" would start a comment.
      return value < 0 ? `(${value})` : String(value);
    case "boolean":
      return value ? "1" : "0";
  }
  if (value instanceof Uint8Array)
    return `X'${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("hex")}'`;
  throw new TypeError(`unsupported D1 parameter type: ${Object.prototype.toString.call(value)}`);
}

const literalLength = (value: unknown) =>
  typeof value === "string" ? value.length : value instanceof Uint8Array ? 2 * value.byteLength : 8;

/**
 * The query with at most {@link D1_MAX_PARAMETERS} parameters: beyond that, the smallest
 * values become literals in its text (the large ones stay bound, since D1 also limits a
 * statement's text to 100 KB). The write path sizes its statements for 8000 parameters and
 * keeps the literals within that text (rowChunks).
 */
function withinParameterLimit(query: CompiledQuery): CompiledQuery {
  const { params } = query;
  if (params.length <= D1_MAX_PARAMETERS) return query;
  const bound = new Set(
    params
      .map((value, i) => [literalLength(value), i])
      .sort((a, b) => b[0] - a[0])
      .slice(0, D1_MAX_PARAMETERS)
      .map(([, i]) => i),
  );
  const kept: unknown[] = [];
  let next = 0;
  const text = query.sql.replace(TOKENS, (token) => {
    if (token !== "?") return token;
    const i = next++;
    if (i >= params.length) throw new Error("D1 statement has more placeholders than parameters");
    if (!bound.has(i)) return sqliteLiteral(params[i]);
    kept.push(params[i]);
    return "?";
  });
  if (next !== params.length) throw new Error("D1 statement has fewer placeholders than parameters");
  return { sql: text, params: kept };
}

/** Buffers as plain Uint8Arrays: D1 binds those (miniflare's proxy fails on a Buffer). */
const bindable = (value: unknown) =>
  Buffer.isBuffer(value) ? new Uint8Array(value.buffer, value.byteOffset, value.byteLength) : value;

async function noInteractiveTransaction(): Promise<never> {
  throw new UnsupportedDriverError(
    `${D1_DRIVER} runs no interactive transactions (only batches, with no reads between their statements), and this operation needs one; nothing was written`,
  );
}

/**
 * Cloudflare D1 (drizzle-orm/d1), through its binding: a statement is prepared, bound
 * and run; an atomic unit is one `batch`, which D1 runs as one transaction (a failing
 * statement rolls the whole batch back). D1 has no interactive transactions:
 * `transaction` fails, and the SQLite dialect uses `batch` instead (see sqlite.ts).
 */
export function d1Executor(db: unknown, options: ExecutorOptions = {}): Executor {
  const client = clientOf(db) as D1Database;
  let compile: (statement: Statement) => CompiledQuery;
  let logger: QueryLogger | undefined;
  let shownCompile: Executor["compile"];
  if (privateApiAvailable(db)) {
    const compiler = compilerFor(db, options);
    compile = (statement) => compiler.compile(statement);
    shownCompile = compile;
    logger = loggerOf(db);
  } else {
    // Public path: the text of drizzle's raw query (`db.run(sql).getQuery()`), run on `db.$client`.
    // Not `db.batch([db.run(...)])`: drizzle's D1 batch binds a raw query's parameters to a
    // prepared statement that a raw query does not have, and fails.
    const database = db as { run(statement: SQL): { getQuery(): CompiledQuery } };
    compile = (statement) => database.run(filled(statement, options.derive)).getQuery();
    shownCompile = (statement) => ({ sql: "", params: isBound(statement) ? Object.values(statement.values) : [] });
  }
  // A prepared statement is bound anew for each call; keeping it saves a prepare (a
  // round trip through miniflare's proxy; in a Worker it is cheap either way).
  const prepared = new LruCache<D1Statement>(200);
  const bound = (statement: Statement) => {
    const query = withinParameterLimit(compile(statement));
    logger?.logQuery(query.sql, query.params);
    return prepared.get(query.sql, () => client.prepare(query.sql)).bind(...query.params.map(bindable));
  };
  return {
    driver: D1_DRIVER,
    transactions: "batch",
    compile: shownCompile,
    all: async (statement) => rowsOf(await bound(statement).all()),
    run: async (statement) => changesOf(await bound(statement).run()),
    script: async (statement) => {
      await bound(statement).run();
    },
    transaction: noInteractiveTransaction,
    limits: { maxParameters: D1_MAX_PARAMETERS, maxStatementBytes: D1_MAX_STATEMENT_BYTES },
    batch: async (statements) =>
      statements.length === 0 ? [] : (await client.batch(statements.map(bound))).map(changesOf),
  };
}
