/**
 * The private parts of drizzle's database objects that executors use, in one place.
 * They are not drizzle's public API: test/drivers/internals.test.ts fails loudly when
 * a drizzle release changes them.
 */
import { entityKind, type SQL } from "drizzle-orm";
import type { ExecutorOptions } from "../sql/executor.js";
import type { CompiledQuery } from "../sql/statements.js";
import { StatementCompiler } from "../sql/statements.js";

interface Internals {
  dialect?: { sqlToQuery?(statement: SQL): CompiledQuery };
  session?: { constructor: unknown; logger?: QueryLogger; prepareQuery?: unknown };
  $client?: unknown;
}

/** Set to "1", the executors use drizzle's public API only (what they fall back to anyway when drizzle changes). */
export const PUBLIC_API_ONLY = "LANGGRAPH_CHECKPOINT_DRIZZLE_PUBLIC_API";

/**
 * Whether this drizzle database still has the private parts the fast executors use:
 * the dialect's compiler and the session's `prepareQuery`. Without them, executors take
 * the public path (public-api.ts).
 */
export function privateApiAvailable(db: unknown): boolean {
  if (process.env[PUBLIC_API_ONLY] === "1") return false;
  const { dialect, session } = internalsOf(db);
  return typeof dialect?.sqlToQuery === "function" && typeof session?.prepareQuery === "function";
}

export interface QueryLogger {
  logQuery(query: string, params: unknown[]): void;
}

const internalsOf = (db: unknown) => (db ?? {}) as Internals;

/** The drizzle class name of the database's session ("PostgresJsSession", ...): it names the driver. */
export function sessionKind(db: unknown): string | undefined {
  const session = internalsOf(db).session;
  const kind = (session?.constructor as { [entityKind]?: unknown } | undefined)?.[entityKind];
  return typeof kind === "string" ? kind : undefined;
}

/** The driver's own client (`db.$client`), which drizzle keeps on every database. */
export function clientOf(db: unknown): unknown {
  return internalsOf(db).$client;
}

/** drizzle's logger of the database, so statements we run ourselves are logged too. */
export function loggerOf(db: unknown): QueryLogger | undefined {
  return internalsOf(db).session?.logger;
}

/** Compiles statements to text with the database's own drizzle dialect. */
export function compilerFor(db: unknown, options: ExecutorOptions = {}): StatementCompiler {
  const dialect = internalsOf(db).dialect;
  const toQuery = dialect?.sqlToQuery?.bind(dialect);
  if (!toQuery) throw new Error("this drizzle-orm version has no dialect.sqlToQuery: it is not supported");
  return new StatementCompiler(toQuery, options.derive);
}

/** The session of a drizzle database or transaction, typed as the caller needs it. */
export function sessionOf<Session>(db: unknown): Session {
  return internalsOf(db).session as Session;
}
