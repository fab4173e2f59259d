/**
 * The `Dialect` interface: the SQL pieces that differ between PostgreSQL, MySQL/MariaDB
 * and SQLite, which the savers ask for instead of branching on the database, and the
 * columns of the tables they work on.
 */
import type { Column, SQL, Table } from "drizzle-orm";
import type { MigrationMeta } from "drizzle-orm/migrator";
import type { Executor, Row, Runner } from "../sql/executor.js";
import type { JsonValue } from "../sql/json.js";
import type { Statement } from "../sql/statements.js";

export type { Row };

/** The columns the generic saver reads and writes, whatever the dialect calls them. */
export interface CheckpointColumns {
  table: Table;
  threadId: Column;
  checkpointNs: Column;
  /** Column to compare a namespace against (MySQL keys a hash of it); see {@link Dialect.nsKey}. */
  nsKey: Column;
  checkpointId: Column;
  parentCheckpointId: Column;
  checkpointType: Column;
  checkpoint: Column;
  /** JSON copy of the checkpoint's channel_versions, so SQL can join its blobs. */
  channelVersions: Column;
  metadata: Column;
  createdAt: Column;
}

export interface BlobColumns {
  table: Table;
  threadId: Column;
  checkpointNs: Column;
  nsKey: Column;
  channel: Column;
  version: Column;
  type: Column;
  blob: Column;
  /** JSON {seq, bases} of an incremental value, null for a whole one (src/savers/values/deltas.ts). */
  deltaChain: Column;
}

export interface WriteColumns {
  table: Table;
  threadId: Column;
  checkpointNs: Column;
  nsKey: Column;
  checkpointId: Column;
  taskId: Column;
  idx: Column;
  channel: Column;
  type: Column;
  blob: Column;
  taskPath: Column;
}

/** The per-thread table: one row per thread that has a checkpoint (see src/schema). */
export interface ThreadColumns {
  table: Table;
  threadId: Column;
  createdAt: Column;
  updatedAt: Column;
  checkpoints: Column;
  latestCheckpointId: Column;
  metadata: Column;
  pinned: Column;
}

export interface StorageColumns {
  checkpoints: CheckpointColumns;
  blobs: BlobColumns;
  writes: WriteColumns;
  threads: ThreadColumns;
}

/** The tables with a metadata column that filters apply to. */
export type MetadataTable = "checkpoints" | "threads";

/** What a put tells its thread's row; values or placeholders (`sql.placeholder`). */
export interface ThreadPutValues {
  threadId: unknown;
  /** The put's namespace as `nsKey` columns hold it. */
  nsKey: unknown;
  checkpointId: unknown;
  /** 1 for a checkpoint of the root namespace "", else 0. */
  rootCount: unknown;
  /** The checkpoint id when in the root namespace, else null. */
  latestCheckpointId: unknown;
  /** Its metadata's JSON text when in the root namespace, else null. */
  metadata: unknown;
}

export interface InsertSpec {
  table: Table;
  columns: Column[];
  /** Values, or placeholders (`sql.placeholder`) in a template. */
  rows: unknown[][];
  /** The key whose conflict is resolved; MySQL resolves on any unique key instead. */
  conflictTarget: Column[];
  /** Columns overwritten on conflict; an empty list keeps the existing row. */
  update: Column[];
}

/** Rows a write depends on; see {@link Dialect.atomically}. */
export interface Precondition {
  /** A plain `select ... from <table> where ...`; the dialect adds its share-lock clause. */
  rows: Statement;
  /** Thrown, with nothing written, when the rows do not exist. */
  failure: () => Error;
  /**
   * Claim the rows instead of share-locking them: lock them exclusively, skipping rows
   * another transaction holds (`for update skip locked`; on SQLite the one writer
   * already excludes everyone), so two sweepers never handle one thread at once. The
   * unit then runs as a transaction, statement after statement, each seeing what
   * committed before it (never as one combined statement with a single snapshot).
   */
  claim?: boolean;
  /**
   * Lock the rows exclusively, waiting for a transaction that holds them: units that
   * first take the same row this way never interleave (two removals from one thread, by
   * its row). The statements then run one after the other, as with a claim.
   */
  exclusive?: boolean;
  /**
   * Lock the rows after the unit's first statement (a put's upsert of its thread's row),
   * not before: units that change a thread all take its row first, so a unit never holds
   * these rows while it waits for the thread's row (a removal holding that row would wait
   * for them: a deadlock). The first statement must be an insert or update of one row
   * (PostgreSQL reads it back through a `returning` before locking). SQLite needs no order.
   */
  afterFirst?: boolean;
}

/** Rows that must exist once a unit's writes are done; see {@link Dialect.atomicallyVerified}. */
export interface Postcondition {
  /** A plain `select ... where ...`, run after the writes, in their unit. */
  rows: Statement;
  /** Thrown, with nothing written, when the rows do not exist. */
  failure: () => Error;
}

/** Reads and writes inside a unit of {@link Dialect.atomicallyReading}. */
export interface UnitRunner {
  /** Runs a statement and returns its rows, as {@link Dialect.query} does. */
  query(statement: Statement): Promise<Row[]>;
  /** Runs a statement and returns the number of rows it changed. */
  run(statement: Statement): Promise<number>;
}

/** What surrounds the rounds of {@link Dialect.atomicallyUntilSettled}. */
export interface SettledUnit {
  /** Run once, first, in the same transaction (a lock the rounds must come after). */
  before?: Statement[];
  precondition?: Precondition;
  /** Run once the rounds changed nothing, in the same transaction (a rename into the emptied thread). */
  after?: Statement[];
}

export interface ForeignTablesAdvice {
  /** A table only LangGraph's official saver for this database creates, with that saver's package. */
  officialMarker?: { table: string; saver: string };
  /** Where the migrations create our tables: "the current schema", "the database". */
  location: string;
  /** The way out besides recipe A's prefixed tables, ending the message. */
  elsewhere: string;
}

export interface MigrationOptions {
  migrationsFolder: string;
  migrationsTable: string;
  /** Postgres only: schema of the migrations table. */
  migrationsSchema?: string;
}

/**
 * The SQL of one database family: PostgreSQL, MySQL/MariaDB or SQLite. The generic
 * saver builds its SQL with drizzle's `sql` tag and asks a dialect only for these
 * pieces; it never branches on which dialect it has. How a statement reaches the
 * database is the {@link Executor}'s business (one per driver).
 */
export interface Dialect {
  /** For messages only. */
  readonly name: string;
  /**
   * Most levels of objects and arrays, the outermost counted, that the family's JSON
   * columns hold (metadata): MariaDB's 31, SQLite's 1000; elsewhere MAX_NESTING_DEPTH.
   */
  readonly maxJsonDepth: number;
  readonly columns: StorageColumns;
  /** Runs the dialect's statements on the driver. */
  readonly executor: Executor;
  /** Runs one statement and returns its rows. */
  query(statement: Statement): Promise<Row[]>;
  /**
   * Runs statements as one atomic unit: all of them take effect or none. With a
   * precondition, its rows are share-locked first (after the first statement with
   * `afterFirst`; a concurrent delete waits for this unit, or this unit for the
   * delete); when there are none, nothing is written.
   * The statements may run as one (PostgreSQL joins them as CTEs, one snapshot, in no
   * set order), so they must not touch the same rows; a claiming or exclusive
   * precondition runs them one after the other.
   */
  atomically(statements: Statement[], precondition?: Precondition): Promise<void>;
  /**
   * Runs the statements in one transaction, round after round until a round changes no
   * row: deletes that waited for a concurrent writer then also remove what it committed.
   * With `unit`: its precondition is locked first (as {@link atomically} does; nothing is
   * written when its rows are gone), and its `after` statements run once, after the rounds.
   */
  atomicallyUntilSettled(statements: Statement[], unit?: SettledUnit): Promise<void>;
  /**
   * Runs `work` in one transaction that first locks the precondition's rows as
   * {@link atomically} does (nothing is run when they are gone): for a unit whose writes
   * depend on rows it reads, which a read before the unit would race. Run again whole
   * after a deadlock. Absent on a batch-only driver (Cloudflare D1), which cannot read
   * inside a unit.
   */
  atomicallyReading?<T>(work: (tx: UnitRunner) => Promise<T>, precondition?: Precondition): Promise<T>;
  /**
   * Where {@link atomicallyReading} is absent (a batch-only driver): runs the statements as
   * {@link atomically} does, then checks the postcondition in the same unit; when its rows
   * are absent, nothing is written and its failure is thrown. For writes planned from a
   * read before the unit, which a change in between would leave incomplete: the caller
   * reads again and retries.
   */
  atomicallyVerified?(
    statements: Statement[],
    precondition: Precondition | undefined,
    postcondition: Postcondition,
  ): Promise<void>;
  /**
   * The statements upserting a put's thread row, in order, to run before the put's
   * checkpoint insert (so that they see whether the checkpoint existed) in the same atomic
   * unit. The first takes the row's lock before anything else is read, serialising the put
   * with other puts, a deleter or a sweeper of that thread.
   */
  threadPut(values: ThreadPutValues): SQL[];
  /**
   * The `created_at` a put's checkpoint gets: the time its thread row's upsert wrote
   * (threadId a value or placeholder), so the row's `updated_at` is exactly its newest.
   */
  putTime(threadId: unknown): SQL;
  /**
   * Recomputes the thread's row from its checkpoints (removing it when none is left),
   * in one transaction that first locks the row: it sees every put that committed before.
   * Keeps `pinned`. For operations that removed or added checkpoints outside `put`.
   */
  refreshThread(threadId: string): Promise<void>;
  /** A multi-row insert that resolves conflicts on the given key. */
  insert(spec: InsertSpec): SQL;
  /** The value compared with the `nsKey` columns for a namespace. */
  nsKey(namespace: string): unknown;
  /** A JSON text parameter (or its placeholder) typed for the JSON columns. */
  jsonParam(json: unknown): SQL;
  /**
   * A predicate on the checkpoints table (or the per-thread table, whose metadata is
   * that of the thread's newest root checkpoint) that is true when the metadata has
   * every key with a JSON-equal value (entries are in stored form, see metadata.ts).
   */
  metadataMatches(entries: [string, JsonValue][], table?: MetadataTable): SQL;
  /**
   * Optional: `metadataMatches` as a template, where the predicate's text does not depend
   * on the filter: the filter (`filterDocument` of its entries) goes in `filterJson`, a
   * placeholder, so a filtered list reuses one compiled statement.
   */
  metadataFilterTemplate?(filterJson: SQL, table?: MetadataTable): SQL;
  /** The text of a top-level field of a JSON document (numbers as their JSON text). */
  jsonField(document: SQL, key: string): SQL;
  /**
   * Optional: a FROM clause giving, as `page_blobs` (thread_id, checkpoint_ns, channel,
   * version, type, blob, delta_chain), the blob rows that the `channel_versions` of the rows of a
   * CTE named `page` (thread_id, ns_key, channel_versions) refer to. With it a page of
   * checkpoints loads in one query; without it, in two (the second by explicit keys).
   */
  pageBlobs?(blobs: BlobColumns): SQL;
  /**
   * Optional: a FROM clause giving, as `base_blob` (thread_id, checkpoint_ns, channel,
   * version, type, blob, delta_chain), the blob rows that the delta rows of the CTE
   * named `head` (thread_id, ns_key, channel, version, delta_chain) extend and that
   * `head` lacks. With it, the statement that loads a page's blobs also loads the bases
   * of its incremental values; without it they take a query of their own.
   */
  chainBaseBlobs?(head: string): SQL;
  /**
   * Optional: a condition on the checkpoints table true of the newest checkpoint of one
   * thread and namespace (`thread` and `nsKey` are values for its columns), added to
   * getTuple's page when it has no checkpoint id. On MariaDB the page's `order by
   * checkpoint_id desc limit 1` alone makes the range optimizer probe every index that
   * starts with thread_id, pages nothing else reads, which fall out of the buffer pool
   * on a large table; an equality on the whole primary key with the id from `max()` is
   * a constant lookup, like a read by id.
   */
  newestCheckpoint?(thread: SQL, nsKey: SQL): SQL;
  /**
   * A value comparable with `created_at` and `updated_at`: the database's current time
   * less `ms` milliseconds (the database's clock, the one puts stamp with).
   */
  millisAgo(ms: number): SQL;
  /** A value comparable with `created_at`, for a time in milliseconds since the epoch. */
  epochMillis(ms: number): SQL;
  /**
   * A `created_at` value (the column, or an aggregate of it) as a number of
   * milliseconds since the epoch, computed in SQL so that no session setting
   * (time zone, date style) or process time zone changes what is read.
   */
  createdAtMillis(createdAt: SQL): SQL;
  /** Rows and bytes on disk (data plus indexes) of the three tables. */
  tableStats(): Promise<TableStats[]>;
  /** The migrations table, qualified as the statements of this dialect need it. */
  migrationsTable(options: MigrationOptions): Promise<SQL>;
  /** Whether the migrations table exists yet. */
  migrationsTableExists(options: MigrationOptions): Promise<boolean>;
  /**
   * A query giving, as `name`, which of `names` are tables where an unqualified CREATE
   * TABLE of the migrations would put ours (on PostgreSQL, in `schema` when given).
   */
  tablesNamed(names: string[], schema?: string): SQL;
  /** What setup() says when tables of our names belong to someone else; see existing-tables.ts. */
  readonly foreignTables: ForeignTablesAdvice;
  /** DDL creating the migrations table if it does not exist. */
  createMigrationsTable(table: SQL): SQL;
  /**
   * Inside the migration transaction: takes the lock that serialises concurrent
   * migrators (and creates what the table needs first, a schema); returns its release.
   */
  lockMigrations(tx: Runner, options: MigrationOptions): Promise<() => Promise<void>>;
  /**
   * Optional: runs the migration loop `work`. Without it, the loop is one transaction of
   * the executor. A dialect on a batch-only driver runs it on the database itself, each
   * migration then being atomic on its own ({@link applyMigration}).
   */
  migrationRun?<T>(work: (tx: Runner) => Promise<T>): Promise<T>;
  /**
   * Optional: applies one migration's statements and records it as applied in `table`
   * (hash, created_at) itself, for a database whose DDL is not transactional (MySQL:
   * resumes after a kill; a batch-only driver: one batch). Without it, the statements
   * run one after the other and the migration is recorded after them. Resolves to true
   * when it applied the migration, false when it found it recorded already (by a
   * concurrent caller) and applied nothing.
   */
  applyMigration?(tx: Runner, table: SQL, migration: MigrationMeta): Promise<boolean>;
}

export interface TableStats {
  table: string;
  rows: number;
  bytes: number;
}

/** The members of a dialect that find, create and lock its migrations table, and apply a migration. */
export type DialectMigrations = Pick<
  Dialect,
  | "migrationsTable"
  | "migrationsTableExists"
  | "tablesNamed"
  | "foreignTables"
  | "createMigrationsTable"
  | "lockMigrations"
  | "migrationRun"
  | "applyMigration"
>;
