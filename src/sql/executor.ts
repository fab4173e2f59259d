/**
 * The `Executor` interface between dialects and drivers: how statements and transactions
 * run on one driver. A dialect builds the SQL; an executor only runs it.
 */
import type { SQL } from "drizzle-orm";
import { type CompiledQuery, MAX_STATEMENT_PARAMETERS, type Statement, type StatementLimits } from "./statements.js";

export type Row = Record<string, unknown>;

/** Runs statements on one connection, or inside one transaction. */
export interface Runner {
  /** Runs a statement and returns its rows. */
  all(statement: Statement): Promise<Row[]>;
  /** Runs a statement and returns the number of rows it changed. */
  run(statement: Statement): Promise<number>;
  /** Runs a one-off statement (a migration's DDL), never kept as a prepared statement. */
  script(statement: SQL): Promise<void>;
}

/**
 * How a transaction runs on this driver: "sync" (the driver blocks, nothing can
 * interleave), "async" (interactive, awaited statement by statement) or "batch"
 * (statements sent together, no reads between them).
 */
export type TransactionStyle = "sync" | "async" | "batch";

/**
 * How statements run on one driver: compiled (drizzle's dialect or a cache of our
 * own), prepared or not, and how a transaction runs. A dialect builds the SQL; an
 * executor only runs it.
 */
export interface Executor extends Runner {
  /** The driver's package name, for messages. */
  readonly driver: string;
  readonly transactions: TransactionStyle;
  /** Text and parameters of a statement, as they go to the driver. */
  compile(statement: Statement): CompiledQuery;
  /**
   * Runs `work` in one transaction: committed when it resolves, rolled back when it
   * throws (the work's own error is rethrown, never a failed rollback's).
   */
  transaction<T>(work: (tx: Runner) => Promise<T>): Promise<T>;
  /**
   * A synchronous driver only: runs `work` in a transaction that the units queued in the
   * same turn of the event loop share (group commit: one BEGIN, one COMMIT and one write
   * of each changed page for all of them). Each unit runs without yielding to the event
   * loop; one that throws is rolled back alone and rejects with its error (the others may
   * then run again). Resolves with the unit's result once the shared commit has
   * succeeded; if the transaction itself fails (BEGIN, COMMIT), every unit of it rejects,
   * none written.
   */
  transactionGrouped?<T>(work: (tx: SyncRunner) => T): Promise<T>;
  /**
   * A batch-only driver (Cloudflare D1) only: runs the statements as one atomic batch
   * (all of them take effect, or none when one fails) and returns how many rows each
   * changed. Nothing can be read between them: a dialect puts a statement that fails the
   * batch where it would have read (see the SQLite dialect's guard).
   */
  batch?(statements: Statement[]): Promise<number[]>;
  /**
   * Limits of one statement below those of the database family, when the driver has
   * them (Cloudflare D1); writers that size their statements by rows (an import) keep
   * each one within them.
   */
  readonly limits?: StatementLimits;
  /** A driver that can load SQLite extensions into its connection (better-sqlite3): loads the library at `path`. */
  loadExtension?(path: string): void;
}

/** Bound parameters one statement may hold on a driver: the family's bound, or the driver's own when lower. */
export function parameterLimit(limits: StatementLimits | undefined): number {
  return Math.min(MAX_STATEMENT_PARAMETERS, limits?.maxParameters ?? MAX_STATEMENT_PARAMETERS);
}

/** Runs statements of a synchronous driver: each returns when it has run. */
export interface SyncRunner {
  all(statement: Statement): Row[];
  run(statement: Statement): number;
}

/** What the registry gives an executor besides the drizzle database. */
export interface ExecutorOptions {
  /** Values a dialect derives from a template's placeholder name (MySQL's key hashes). */
  derive?: (name: string, values: Record<string, unknown>) => unknown;
  /** better-sqlite3 files in WAL mode: checkpoints in a worker thread under sustained writes (drivers/wal-checkpointer.ts). Default true. */
  backgroundCheckpoints?: boolean;
}
