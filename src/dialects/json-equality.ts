/**
 * Exact JSON equality in SQL for the dialects without a native deep comparison (MySQL,
 * SQLite): a metadata filter value expanded into one test per node of the document.
 */
import { type SQL, sql } from "drizzle-orm";
import type { JsonValue } from "../sql/json.js";
import { allOf } from "../sql/statements.js";

export type JsonKind = "string" | "number" | "boolean" | "null" | "object" | "array";

/**
 * How a dialect without a native deep JSON equality addresses and tests one node
 * of a JSON document. `N` is whatever identifies a node (a JSON path, a row of
 * json_each, ...).
 */
export interface JsonNodeOps<N> {
  /** True when `parent` has `key` (object key or array index) and `test` holds for it. */
  member(parent: N, key: string | number, test: (child: N) => SQL): SQL;
  is(node: N, kind: JsonKind): SQL;
  stringEquals(node: N, value: string): SQL;
  numberEquals(node: N, value: number): SQL;
  booleanEquals(node: N, value: boolean): SQL;
  /** Number of elements of an array node or keys of an object node. */
  size(node: N): SQL;
}

/**
 * Exact JSON equality expanded into per-node predicates: types must match, numbers
 * compare by value, arrays element by element in order, objects key by key with the
 * same number of keys (so key order never matters and extra keys never match).
 */
export function jsonEquals<N>(ops: JsonNodeOps<N>, node: N, value: JsonValue): SQL {
  if (value === null) return ops.is(node, "null");
  if (typeof value === "string") return sql`(${ops.is(node, "string")} and ${ops.stringEquals(node, value)})`;
  if (typeof value === "number") return sql`(${ops.is(node, "number")} and ${ops.numberEquals(node, value)})`;
  if (typeof value === "boolean") return sql`(${ops.is(node, "boolean")} and ${ops.booleanEquals(node, value)})`;
  const entries: [string | number, JsonValue][] = Array.isArray(value)
    ? value.map((item, i) => [i, item])
    : Object.entries(value);
  const parts = [ops.is(node, Array.isArray(value) ? "array" : "object"), sql`${ops.size(node)} = ${entries.length}`];
  for (const [key, item] of entries) parts.push(ops.member(node, key, (child) => jsonEquals(ops, child, item)));
  return allOf(parts);
}
