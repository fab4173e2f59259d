/** Pieces the native vector indexes (pg-vectors.ts, libsql-vectors.ts, sqlite-vec-vectors.ts) share. */
import { getTableName, type SQL, sql, type Table } from "drizzle-orm";
import { VectorIndexError } from "../errors.js";
import { inPieces, type Statement } from "../sql/statements.js";
import type { ItemKey } from "./store-dialect.js";

/** Rows per statement of a vector write: far below every family's parameter limit. */
const ROWS_PER_STATEMENT = 200;

/** The side table's name beside the items table: `<prefix>store_vectors` for `<prefix>store_items`. */
export function vectorTableName(items: Table): string {
  const name = getTableName(items);
  return name.endsWith("store_items") ? `${name.slice(0, -"items".length)}vectors` : `${name}_vectors`;
}

/** `(ns_path, item_key) in (values ...)` over the items, or undefined for none. */
function itemsIn(items: ItemKey[]): SQL {
  const values = items.map(({ path, key }) => sql`(${path}, ${key})`);
  return sql`(${sql.identifier("ns_path")}, ${sql.identifier("item_key")}) in (values ${sql.join(values, sql`, `)})`;
}

/** Statements `build(predicate)` for the items in pieces, each predicate naming up to ROWS_PER_STATEMENT items. */
export function forItems(items: ItemKey[], build: (predicate: SQL) => Statement[]): Statement[] {
  return inChunks(items).flatMap((piece) => build(itemsIn(piece)));
}

/** The rows in pieces of ROWS_PER_STATEMENT. */
export const inChunks = <T>(rows: T[]): T[][] => inPieces(rows, ROWS_PER_STATEMENT);

/** The float32 bytes of a vector, as SQLite binds them (little-endian on every platform Node runs on). */
export const vectorBytes = (vector: Float32Array): Buffer =>
  Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);

/** The dimensions a column definition names (`vector(8)`, `F32_BLOB(8)`, `float[8]`), if any. */
export function declaredDims(definition: unknown, pattern: RegExp): number | undefined {
  const match = typeof definition === "string" ? pattern.exec(definition) : null;
  return match ? Number(match[1]) : undefined;
}

/**
 * Whether the side table `name` exists (`found`: its dimensions, null when unreadable,
 * undefined when there is none); one for other dimensions is a VectorIndexError.
 */
export function existsFor(found: number | undefined | null, dims: number, name: string): boolean {
  if (found !== undefined && found !== dims) {
    throw new VectorIndexError(
      `the native vector index ${name} holds vectors of ${found ?? "unknown"} dimensions, not ${dims}: drop it (and let setup() build it again) to change the model`,
    );
  }
  return found !== undefined;
}
