/**
 * Metadata is stored in the database's JSON type so filters run in SQL. Two
 * transformations make that exact and portable, applied to stored metadata and to
 * filter values alike (so equality is preserved):
 * - keys are sorted, so a deep comparison never depends on insertion order;
 * - strings a database cannot hold in JSON (U+0000, lone surrogates) are escaped
 *   behind a marker that ordinary text never starts with.
 */
import { InvalidInputError } from "../../errors.js";
import { MAX_NESTING_DEPTH } from "../../serde/bounds.js";
import type { JsonValue } from "../../sql/json.js";

const MARKER = "\u{10FFFD}json:";
// biome-ignore lint/suspicious/noControlCharactersInRegex: U+0000 is exactly what must be found.
const NEEDS_ESCAPE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function escapeString(value: string): string {
  return NEEDS_ESCAPE.test(value) || value.startsWith(MARKER) ? MARKER + JSON.stringify(value) : value;
}

/** Keys are escaped also when they start with "-": MariaDB cannot address those in a JSON path. */
function escapeKey(key: string): string {
  return key.startsWith("-") ? MARKER + JSON.stringify(key) : escapeString(key);
}

function unescapeString(value: string): string {
  return value.startsWith(MARKER) ? (JSON.parse(value.slice(MARKER.length)) as string) : value;
}

/** Adds a key as an own property: plain assignment of "__proto__" would set the prototype. */
function setOwn(target: object, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * Turns a metadata value into the canonical JSON value we store and compare. `level`: how
 * many objects and arrays enclose it; beyond `most` it is an InvalidInputError (before
 * the recursion could exhaust the stack, or the database refuse the document).
 */
function toStoredJson(value: unknown, path = "metadata", level = 0, most = MAX_NESTING_DEPTH): JsonValue | undefined {
  if (value === null) return null;
  switch (typeof value) {
    case "string":
      return escapeString(value);
    case "boolean":
      return value;
    case "number":
      if (!Number.isFinite(value)) throw new InvalidInputError(`${path}: ${value} cannot be stored as JSON`);
      return value;
    case "undefined":
    case "function":
    case "symbol":
      return undefined;
    case "bigint":
      throw new InvalidInputError(`${path}: bigint cannot be stored as JSON`);
  }
  const withToJSON = value as { toJSON?: () => unknown };
  if (!Array.isArray(value) && typeof withToJSON.toJSON === "function") {
    return toStoredJson(withToJSON.toJSON(), path, level, most);
  }
  if (level >= most) {
    throw new InvalidInputError(
      `${path.length > 80 ? `${path.slice(0, 80)}...` : path} nests objects and arrays more than ${most} levels deep, the most this database's JSON holds`,
    );
  }
  if (Array.isArray(value)) {
    return value.map((item, i) => toStoredJson(item, `${path}[${i}]`, level + 1, most) ?? null);
  }
  const result: { [key: string]: JsonValue } = {};
  for (const key of Object.keys(value).sort()) {
    const item = toStoredJson((value as Record<string, unknown>)[key], `${path}.${key}`, level + 1, most);
    if (item !== undefined) setOwn(result, escapeKey(key), item);
  }
  return result;
}

/** The inverse of {@link toStoredJson} for values read back from the database. */
export function fromStoredJson(value: unknown): unknown {
  if (typeof value === "string") return unescapeString(value);
  if (Array.isArray(value)) return value.map(fromStoredJson);
  if (value !== null && typeof value === "object") {
    const result: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) setOwn(result, unescapeString(key), fromStoredJson(item));
    return result;
  }
  return value;
}

/** Metadata as the JSON text stored; nested at most `maxDepth` levels (the dialect's maxJsonDepth). */
export function serializeMetadata(metadata: unknown, maxDepth = MAX_NESTING_DEPTH): string {
  if (metadata === null || typeof metadata !== "object" || Array.isArray(metadata)) {
    throw new InvalidInputError("checkpoint metadata must be an object");
  }
  return JSON.stringify(toStoredJson(metadata, "metadata", 0, maxDepth));
}

/** Drivers return JSON columns parsed (postgres.js, MySQL 8) or as text (MariaDB, SQLite). */
export function parseMetadata(stored: unknown): Record<string, unknown> {
  const value = typeof stored === "string" ? JSON.parse(stored) : stored;
  return fromStoredJson(value) as Record<string, unknown>;
}

/**
 * Bounds on a metadata filter, checked before any SQL is built: MySQL and SQLite
 * compare a filter node by node, and each node is a predicate in the statement.
 */
export const FILTER_LIMITS = {
  /** Top-level keys. */
  keys: 100,
  /** Nesting of arrays and objects inside one filter value (a scalar value is depth 0). */
  depth: 10,
  /** JSON values in the whole filter: each key's value and every array element and member inside it. */
  values: 500,
  /** Bytes of the filter as JSON text. */
  bytes: 16 * 1024,
} as const;

/** Counts the values of `value` into `budget`, stopping as soon as a limit is passed (cycles included). */
function measureFilterValue(value: unknown, key: string, depth: number, budget: { values: number }): void {
  if (--budget.values < 0) {
    throw new InvalidInputError(`list filter has more than ${FILTER_LIMITS.values} values in total`);
  }
  if (value === null || typeof value !== "object") return;
  const withToJSON = value as { toJSON?: () => unknown };
  if (typeof withToJSON.toJSON === "function") {
    measureFilterValue(withToJSON.toJSON(), key, depth, budget);
    return;
  }
  if (depth + 1 > FILTER_LIMITS.depth) {
    throw new InvalidInputError(`filter.${key} is nested deeper than ${FILTER_LIMITS.depth} levels`);
  }
  for (const item of Array.isArray(value) ? value : Object.values(value)) {
    measureFilterValue(item, key, depth + 1, budget);
  }
}

/**
 * Filter entries in stored form; keys whose value is `undefined` are ignored. A filter
 * beyond {@link FILTER_LIMITS} is an InvalidInputError.
 */
export function storedFilterEntries(filter: Record<string, unknown> | undefined): [string, JsonValue][] {
  if (!filter) return [];
  if (typeof filter !== "object" || Array.isArray(filter)) throw new InvalidInputError("list filter must be an object");
  const given = Object.entries(filter).filter(([, value]) => value !== undefined);
  if (given.length > FILTER_LIMITS.keys) {
    throw new InvalidInputError(`list filter has ${given.length} keys, more than ${FILTER_LIMITS.keys}`);
  }
  const budget = { values: FILTER_LIMITS.values };
  for (const [key, value] of given) measureFilterValue(value, key, 0, budget);
  const entries: [string, JsonValue][] = [];
  let bytes = 1; // the opening brace
  for (const [key, value] of given) {
    const stored = toStoredJson(value, `filter.${key}`);
    if (stored === undefined) throw new InvalidInputError(`filter.${key}: ${typeof value} cannot be matched`);
    const escapedKey = escapeKey(key);
    bytes += Buffer.byteLength(JSON.stringify(escapedKey)) + Buffer.byteLength(JSON.stringify(stored)) + 2; // colon, comma or brace
    if (bytes > FILTER_LIMITS.bytes) {
      throw new InvalidInputError(`list filter is larger than ${FILTER_LIMITS.bytes} bytes as JSON`);
    }
    entries.push([escapedKey, stored]);
  }
  return entries;
}
