/**
 * Every error the saver throws on purpose extends {@link CheckpointSaverError}, so an
 * application can tell ours from a driver's or a database's with one `instanceof`.
 */
import { InvalidNamespaceError as LangGraphInvalidNamespaceError } from "@langchain/langgraph-checkpoint";

/** Marks our InvalidNamespaceError, whose prototype chain is LangGraph's class (see below). */
const OUR_NAMESPACE_ERROR = Symbol("langgraph-checkpoint-drizzle.InvalidNamespaceError");

/** Common base class of the errors this package throws. */
export class CheckpointSaverError extends Error {
  override name = "CheckpointSaverError";

  /** The usual prototype test; our InvalidNamespaceError is also an InvalidInputError (and so one of ours). */
  static override [Symbol.hasInstance](value: unknown): boolean {
    // `this` is the class `instanceof` asks about: subclasses inherit this test.
    // biome-ignore lint/complexity/noThisInStatic: see above
    if (Function.prototype[Symbol.hasInstance].call(this, value)) return true;
    if (typeof value !== "object" || value === null || !(OUR_NAMESPACE_ERROR in value)) return false;
    // biome-ignore lint/complexity/noThisInStatic: see above
    return this === CheckpointSaverError || this === InvalidInputError;
  }
}

/** Bad input from the caller; nothing was written. */
export class InvalidInputError extends CheckpointSaverError {
  override name = "InvalidInputError";
}

/**
 * A store namespace (or namespace prefix) that LangGraph's `BaseStore` does not accept;
 * nothing was written. It extends LangGraph's own InvalidNamespaceError, so code written
 * for InMemoryStore catches it, and is an InvalidInputError and a CheckpointSaverError
 * as well (their `instanceof` says so).
 */
export class InvalidNamespaceError extends LangGraphInvalidNamespaceError {
  override name = "InvalidNamespaceError";
}
// On the prototype, so the class itself (its prototype) passes the test too.
Object.defineProperty(InvalidNamespaceError.prototype, OUR_NAMESPACE_ERROR, { value: true });

/** A put whose parent checkpoint, which its unchanged channels refer to, was deleted. */
export class MissingParentError extends CheckpointSaverError {
  override name = "MissingParentError";
}

/**
 * The database kept choosing this call's atomic unit as the loser of a lock conflict
 * (a deadlock victim, a serialization failure, a lock still busy after the busy timeout)
 * after every retry; nothing of the unit was written. `cause` is the last conflict.
 */
export class WriteConflictError extends CheckpointSaverError {
  override name = "WriteConflictError";
  constructor(
    /** How many times the unit ran. */
    readonly attempts: number,
    cause: unknown,
  ) {
    super(
      `the database refused this write as a lock conflict ${attempts} times in a row (${databaseMessage(cause)}); nothing was written`,
      { cause },
    );
  }
}

/**
 * A thread changed while it was read for an export: checkpoints already read were removed
 * (a prune, a sweep, a delete). Its rows read so far are no consistent state: the export
 * marks the thread failed (an `abort` line) and goes on; exporting it again reads it anew.
 */
export class ThreadChangedError extends CheckpointSaverError {
  override name = "ThreadChangedError";
}

/**
 * A call on a saver or store after its `close()`: refused before reaching the database,
 * the same on every driver (whether `close()` ended the connection or, for a database
 * the application passed in, left it open).
 */
export class SaverClosedError extends CheckpointSaverError {
  override name = "SaverClosedError";
}

/** A value that cannot be serialized, or stored bytes that cannot be decoded. */
export class SerializationError extends CheckpointSaverError {
  override name = "SerializationError";
}

/**
 * A sealed value that cannot be opened (encryption at rest): its key id is not among the
 * saver's keys, it was changed or moved to another place by SQL, or it is a plaintext row
 * the saver refuses. Nothing of the read is returned.
 */
export class DecryptionError extends CheckpointSaverError {
  override name = "DecryptionError";
}

/** A key id the saver was asked to open a value with is not among its keys; `keyId` names it. */
export class MissingKeyError extends DecryptionError {
  override name = "MissingKeyError";
  constructor(
    readonly keyId: string,
    message: string,
  ) {
    super(message);
  }
}

/** A drizzle database over a driver the saver does not support. */
export class UnsupportedDriverError extends CheckpointSaverError {
  override name = "UnsupportedDriverError";
}

/**
 * The store's native vector index (`index.native`) was asked for and this database or
 * driver cannot have it (no pgvector, MySQL/MariaDB, D1), or it exists for another number
 * of dimensions, or `setup()` has not created it yet. Nothing was written.
 */
export class VectorIndexError extends CheckpointSaverError {
  override name = "VectorIndexError";
}

/** A package the call needs is not installed; the message says what to install. */
export class MissingPackageError extends CheckpointSaverError {
  override name = "MissingPackageError";
  constructor(
    message: string,
    /** The packages that would serve, preferred first. */
    readonly packages: string[],
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** `fromUrl` found no installed driver for the URL's scheme (`packages`: the drivers that would serve it). */
export class DriverNotInstalledError extends MissingPackageError {
  override name = "DriverNotInstalledError";
}

/** A target thread that already holds other content, and no `replace` was asked for. */
export class ThreadConflictError extends CheckpointSaverError {
  override name = "ThreadConflictError";
}

/** A line of a transfer file over the line bound; reading can go on at the next line. */
export class LineTooLongError extends InvalidInputError {
  override name = "LineTooLongError";
}

/** A transfer file's stream itself failed (a directory, an I/O error): nothing after this point can be read. */
export class FileReadError extends InvalidInputError {
  override name = "FileReadError";
}

/**
 * Whether `error` is drizzle's wrapper of a failed statement: its message is the whole SQL
 * text ("Failed query: ...", SQLite: "Failed to run the query ..."), its cause the database's error.
 */
export function isFailedStatement(error: unknown): error is Error & { cause: Error } {
  return (
    error instanceof Error && error.cause instanceof Error && /^Failed (query|to run the query)/.test(error.message)
  );
}

/** An error's message, the database's own below drizzle's wrapper of a failed statement. */
export function databaseMessage(error: unknown): string {
  let current = error;
  while (isFailedStatement(current)) current = current.cause;
  return current instanceof Error ? current.message : String(current);
}

export interface MigrationInfo {
  /** File name without ".sql", e.g. "0000_init". */
  tag: string;
  /** The journal timestamp that identifies the migration. */
  createdAt: number;
}

/** A migration that failed; `createdAt` is its journal timestamp, `cause` the database's error. */
export class MigrationError extends CheckpointSaverError {
  override name = "MigrationError";
  constructor(
    readonly createdAt: number,
    cause: unknown,
    /** Filled in by the saver from the journal. */
    readonly migration?: MigrationInfo,
  ) {
    super(`migration ${migration?.tag ?? createdAt} failed: ${databaseMessage(cause)}`, { cause });
  }
}

/**
 * setup() found tables of the names its migrations create that it did not create
 * (LangGraph's official savers use the same names). Nothing was changed.
 */
export class ExistingTablesError extends MigrationError {
  override name = "ExistingTablesError";
  constructor(
    /** The tables in the way, as the database names them. */
    readonly tables: string[],
    explanation: string,
    migration: MigrationInfo,
  ) {
    super(migration.createdAt, new Error(explanation), migration);
  }
}

/** What a value is, for an error message about it: "null", "undefined", "number", or an object's class ("Buffer"). */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (typeof value !== "object") return typeof value;
  return value.constructor?.name ?? "an object";
}

/**
 * An error of the command line whose message is meant for the user as is (no stack
 * trace); `exitCode` is the process's (src/cli/errors.ts: 1 the operation failed).
 */
export class CliError extends CheckpointSaverError {
  override name = "CliError";
  constructor(
    message: string,
    readonly exitCode = 1,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The command line itself is wrong (unknown option, malformed filter, bad URL): exit code 2. */
export class UsageError extends CliError {
  override name = "UsageError";
  constructor(message: string) {
    super(message, 2);
  }
}
