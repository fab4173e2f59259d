/**
 * The `StoreDialect` interface: the SQL of `DrizzleStore` (src/savers/store/) that differs
 * between PostgreSQL, MySQL/MariaDB and SQLite: reading a member of an item's JSON value
 * with its type, the upsert, and how a batch's reads and writes form one unit.
 */
import type { Column, SQL, Table } from "drizzle-orm";
import type { Executor, Runner } from "../sql/executor.js";
import type { Statement } from "../sql/statements.js";

/** The columns of the store's items table, whatever the dialect calls them. */
export interface StoreColumns {
  table: Table;
  nsPath: Column;
  key: Column;
  value: Column;
  embeddings: Column;
  createdAt: Column;
  updatedAt: Column;
  expiresAt: Column;
  ttlMinutes: Column;
}

/** An item: its encoded namespace path and its key. */
export interface ItemKey {
  path: string;
  key: string;
}

/** A comparison of a filter's range operators. */
export type Comparison = "<" | "<=" | ">" | ">=";

/** A value a filter compares a member with. */
export type Scalar = string | number | boolean | null;

/**
 * Predicates on one top-level member of the value column. Each is true only when the
 * member exists with the type compared (a missing member or another type is false or
 * NULL, never true), so `{ a: 1 }` never matches `{ a: "1" }`.
 */
export interface ValueField {
  /** The member exists (any type, JSON null too). */
  exists(): SQL;
  /** The member has the JSON type and value of `value` (numbers as doubles); never NULL. */
  equals(value: Scalar): SQL;
  /** {@link equals} one of `values` (false for none); never NULL, whatever the list's length. */
  oneOf(values: readonly Scalar[]): SQL;
  /** A string member compared with `value` by code points (UTF-8 bytes), never by a collation. */
  text(op: Comparison, value: string): SQL;
  /** A number member compared with `value` as numbers (doubles). */
  number(op: Comparison, value: number): SQL;
}

export interface StoreDialect {
  /** For messages only. */
  readonly name: string;
  /** Most levels of objects and arrays in an item's value (see Dialect.maxJsonDepth). */
  readonly maxJsonDepth: number;
  readonly executor: Executor;
  readonly columns: StoreColumns;
  /** Longest namespace path and key in UTF-8 bytes, when the table bounds them (MySQL's key length). */
  readonly limits?: { pathBytes: number; keyBytes: number };
  /** A namespace path or key as its column compares it. */
  text(value: string): unknown;
  /** A JSON text parameter (or its placeholder) for the value column. */
  json(text: unknown): SQL;
  /** The value column as the driver returns it: JSON text, or a parsed object. */
  readonly valueOut: SQL;
  /**
   * The value column as its JSON text, compared as bytes (a parameter through `text`):
   * rekey and status find sealed values by its first characters.
   */
  readonly valueText: SQL;
  /**
   * True when the value column holds a JSON string, which is a sealed item: plaintext
   * values are always objects. Cheaper than reading `valueText`'s first characters.
   */
  readonly valueIsString: SQL;
  /** A top-level member of the value column, by its key (any string). */
  field(key: string): ValueField;
  /**
   * Inserts rows (values in the order of `upsertColumns`), replacing the value, embeddings,
   * `updated_at` and expiry of an existing item and keeping its `created_at`.
   */
  upsert(rows: unknown[][]): SQL;
  /** The columns of {@link upsert}'s rows, in order. */
  readonly upsertColumns: Column[];
  /**
   * Runs `reads` and then `writes` as one unit: the writes all take effect or none do;
   * the reads see nothing of them. A conflict (deadlock, busy lock) runs the unit again.
   * On a batch-only driver the reads run first and the writes as one atomic batch.
   * Without reads, a single write runs as the statement it is (atomic on its own).
   */
  unit<T>(reads: ((runner: Runner) => Promise<T>) | undefined, writes: Statement[]): Promise<T | undefined>;
  /** Runs one statement on its own (atomic), again on a conflict as `unit` does; returns the rows it changed. */
  runAlone(statement: Statement): Promise<number>;
  /**
   * `where` made a predicate under which an UPDATE or DELETE of items takes their row locks
   * in (namespace path, key) order, the order of every batch's writes: statements that
   * lock items in one shared order never wait on each other in a cycle (a deadlock).
   */
  inKeyOrder(where: SQL): SQL;
}
