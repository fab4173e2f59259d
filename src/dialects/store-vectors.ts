/**
 * The `VectorIndex` interface: a database's native vector index for the store's semantic
 * search (pgvector, libSQL's vector index, sqlite-vec), kept in a side table beside the
 * store's items. The store (src/savers/store/native-index/) sees only this interface; the
 * wiring (src/wiring/vector-indexes.ts) picks the implementation from the family and driver.
 */
import type { SQL } from "drizzle-orm";
import type { Runner } from "../sql/executor.js";
import type { Statement } from "../sql/statements.js";
import type { ItemKey } from "./store-dialect.js";

/** The backends, for options and messages. */
export type VectorIndexKind = "pgvector" | "libsql" | "sqlite-vec";

/** SQL true when an item with this path and key (column references of the side table) exists. */
export type ItemExists = (path: SQL, key: SQL) => SQL;

/** A vector of an item to index: the item's vector number `seq`. */
export interface VectorRow extends ItemKey {
  seq: number;
  vector: Float32Array;
}

export interface VectorIndex {
  readonly kind: VectorIndexKind;
  /** Largest number of nearest vectors one {@link nearest} returns. */
  readonly maxK: number;
  /**
   * Creates what the index needs when missing (extension, side table, index), idempotently
   * and safely from several processes at once. Returns true when the side table was created
   * by this call (the store then fills it from the items' embeddings), false when it was
   * there. Throws a `VectorIndexError` when the database cannot have it, or when it exists
   * for another number of dimensions.
   */
  setup(dims: number, fill: (runner: Runner) => Promise<void>): Promise<boolean>;
  /**
   * Whether the side table exists (for vectors of `dims` dimensions; otherwise throws a
   * `VectorIndexError`), after preparing the connection (loading an extension).
   */
  ready(dims: number): Promise<boolean>;
  /** Removes every vector of the items. */
  remove(items: ItemKey[]): Statement[];
  /** Adds vectors. */
  insert(rows: VectorRow[]): Statement[];
  /**
   * Removes the vectors whose item is gone (expired and swept, or deleted by a store
   * without the index); `itemExists` is the predicate "an item has this path and key".
   */
  removeOrphans(itemExists: ItemExists): Statement[];
  /** A select of the path and key (two columns) of the `k` vectors nearest to `query`. */
  nearest(query: Float32Array, k: number): SQL;
  /** Runs `work`, which reads {@link nearest} with this `k`, with the settings it needs (pgvector's ef_search). */
  searching<T>(runner: Runner, k: number, work: (runner: Runner) => Promise<T>): Promise<T>;
}
