/**
 * A search's `filter`: checked once into conditions, then either one SQL predicate on the
 * items table (so it applies before LIMIT and OFFSET) or, for sealed values that SQL cannot
 * read, the same test on a value in the process (`matchesFilter`). Keys are top-level
 * members of an item's value. Equality is typed (1 never equals "1"); range operators
 * compare numbers as numbers and strings by code points; a missing member satisfies only
 * `$ne`, `$nin` and `$exists: false`. Anything else (an unknown operator, `$in` without an
 * array, an object or array to compare) is an InvalidInputError, and so is a filter beyond
 * {@link STORE_FILTER_LIMITS}.
 */
import { type SQL, sql } from "drizzle-orm";
import type { Comparison, Scalar, StoreDialect } from "../../dialects/store-dialect.js";
import { describeValue, InvalidInputError } from "../../errors.js";
import { comparePaths } from "./namespaces.js";

/** One checked condition on one member: every condition of a filter must hold. */
export type FilterCondition =
  | { key: string; op: "eq" | "ne"; value: Scalar }
  | { key: string; op: "in" | "nin"; values: Scalar[]; lookup: ReadonlySet<Scalar> }
  | { key: string; op: "exists"; present: boolean }
  | { key: string; op: "range"; comparison: Comparison; value: string | number };

/**
 * The most a search's filter may hold: conditions (a key's operators each count) and the
 * values they compare with, `$in` and `$nin` lists included. Beyond them the filter is an
 * InvalidInputError before any SQL: statements must stay within every driver's parameter
 * limit (SQLite binds at most 32,766).
 */
export const STORE_FILTER_LIMITS = { conditions: 100, values: 10_000 } as const;

const RANGES: Record<string, Comparison> = { $gt: ">", $gte: ">=", $lt: "<", $lte: "<=" };

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Text every database stores alike (keys, labels, strings of values and filters): a NUL
 * or a lone surrogate is refused, as PostgreSQL fails on such text with its own error
 * while the others take it (filters then matched nothing).
 */
export function checkText(text: unknown, what: string): string {
  if (typeof text !== "string") throw new InvalidInputError(`${what} must be a string, got ${describeValue(text)}`);
  if (text.includes("\0")) throw new InvalidInputError(`${what} contains a NUL character`);
  if (!text.isWellFormed()) throw new InvalidInputError(`${what} contains a lone surrogate`);
  return text;
}

function scalar(value: unknown, where: string): Scalar {
  if (typeof value === "string") return checkText(value, `filter ${where}`);
  if (value === null || typeof value === "boolean") return value;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new InvalidInputError(`filter ${where}: ${value} is not a JSON number`);
    return value;
  }
  throw new InvalidInputError(
    `filter ${where}: only strings, numbers, booleans and null can be compared, got ${describeValue(value)}`,
  );
}

function scalars(values: unknown, where: string): Scalar[] {
  if (!Array.isArray(values))
    throw new InvalidInputError(`filter ${where}: expects an array, got ${describeValue(values)}`);
  return values.map((value) => scalar(value, where));
}

function parseOperator(key: string, name: string, operand: unknown): FilterCondition {
  const where = `"${key}" ${name}`;
  switch (name) {
    case "$eq":
    case "$ne":
      return { key, op: name === "$eq" ? "eq" : "ne", value: scalar(operand, where) };
    case "$in":
    case "$nin": {
      const values = scalars(operand, where);
      return { key, op: name === "$in" ? "in" : "nin", values, lookup: new Set(values) };
    }
    case "$exists":
      if (typeof operand !== "boolean") {
        throw new InvalidInputError(`filter ${where}: expects true or false, got ${describeValue(operand)}`);
      }
      return { key, op: "exists", present: operand };
  }
  const comparison = RANGES[name];
  if (!comparison) {
    throw new InvalidInputError(
      `filter "${key}": unknown operator ${name} (known: $eq $ne $gt $gte $lt $lte $in $nin $exists)`,
    );
  }
  const value = scalar(operand, where);
  if (typeof value !== "number" && typeof value !== "string") {
    throw new InvalidInputError(`filter ${where}: compares numbers or strings, got ${describeValue(value)}`);
  }
  return { key, op: "range", comparison, value };
}

/** The conditions of `filter`, checked (none for an empty filter); throws InvalidInputError. */
export function parseFilter(filter: unknown): FilterCondition[] {
  if (filter === undefined || filter === null) return [];
  if (!isPlainObject(filter)) throw new InvalidInputError(`filter must be an object, got ${describeValue(filter)}`);
  const conditions: FilterCondition[] = [];
  for (const [key, condition] of Object.entries(filter)) {
    checkText(key, `filter key ${JSON.stringify(key)}`);
    if (isPlainObject(condition)) {
      const names = Object.keys(condition);
      if (names.length === 0 || !names.every((name) => name.startsWith("$"))) {
        throw new InvalidInputError(
          `filter "${key}": an object is either operators ($eq, $gt, ...) or a value to compare, and values to compare must be strings, numbers, booleans or null`,
        );
      }
      for (const name of names) conditions.push(parseOperator(key, name, condition[name]));
    } else {
      conditions.push({ key, op: "eq", value: scalar(condition, `"${key}"`) });
    }
  }
  checkLimits(conditions);
  return conditions;
}

function checkLimits(conditions: FilterCondition[]): void {
  const { conditions: most, values: mostValues } = STORE_FILTER_LIMITS;
  if (conditions.length > most) {
    throw new InvalidInputError(`filter has ${conditions.length} conditions, more than ${most}`);
  }
  const values = conditions.reduce((sum, c) => sum + (c.op === "in" || c.op === "nin" ? c.values.length : 1), 0);
  if (values > mostValues) {
    throw new InvalidInputError(`filter compares with ${values} values in all, more than ${mostValues}`);
  }
}

function conditionSql(store: StoreDialect, condition: FilterCondition): SQL {
  const field = store.field(condition.key);
  switch (condition.op) {
    case "eq":
      return field.equals(condition.value);
    case "ne":
      return sql`not ${field.equals(condition.value)}`;
    case "in":
      return field.oneOf(condition.values);
    case "nin":
      return sql`not ${field.oneOf(condition.values)}`;
    case "exists":
      return condition.present ? field.exists() : sql`not ${field.exists()}`;
    case "range": {
      const { comparison, value } = condition;
      const test = typeof value === "number" ? field.number(comparison, value) : field.text(comparison, value);
      return sql`coalesce(${test}, (1 = 0))`;
    }
  }
}

/** The predicates of `filter`, all of which an item must satisfy (none for an empty filter). */
export function filterPredicates(store: StoreDialect, filter: unknown): SQL[] {
  return parseFilter(filter).map((condition) => conditionSql(store, condition));
}

/** The member is present with the type and value of `value` (numbers as doubles, as SQL compares them). */
function equalsValue(value: Record<string, unknown>, key: string, expected: Scalar): boolean {
  if (!Object.hasOwn(value, key)) return false;
  const actual = value[key];
  return actual === expected && typeof actual === typeof expected;
}

function inRange(actual: unknown, comparison: Comparison, operand: string | number): boolean {
  let order: number;
  if (typeof operand === "number" && typeof actual === "number") order = actual - operand;
  else if (typeof operand === "string" && typeof actual === "string") order = comparePaths(actual, operand);
  else return false;
  switch (comparison) {
    case ">":
      return order > 0;
    case ">=":
      return order >= 0;
    case "<":
      return order < 0;
    case "<=":
      return order <= 0;
  }
}

/**
 * Whether a value satisfies every condition, with the semantics of {@link filterPredicates}:
 * used when the values are sealed and SQL cannot read them.
 */
export function matchesFilter(conditions: readonly FilterCondition[], value: Record<string, unknown>): boolean {
  return conditions.every((condition) => matchesCondition(condition, value));
}

function matchesCondition(condition: FilterCondition, value: Record<string, unknown>): boolean {
  const { key } = condition;
  switch (condition.op) {
    case "eq":
      return equalsValue(value, key, condition.value);
    case "ne":
      return !equalsValue(value, key, condition.value);
    case "in":
      return Object.hasOwn(value, key) && condition.lookup.has(value[key] as Scalar);
    case "nin":
      return !(Object.hasOwn(value, key) && condition.lookup.has(value[key] as Scalar));
    case "exists":
      return Object.hasOwn(value, key) === condition.present;
    case "range":
      return Object.hasOwn(value, key) && inRange(value[key], condition.comparison, condition.value);
  }
}
