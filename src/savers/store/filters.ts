/**
 * A search's `filter` as one SQL predicate on the items table, so it applies before
 * LIMIT and OFFSET. Keys are top-level members of an item's value. Equality is typed
 * (1 never equals "1"); range operators compare numbers as numbers and strings by code
 * points; a missing member satisfies only `$ne`, `$nin` and `$exists: false`. Anything
 * else (an unknown operator, `$in` without an array, an object or array to compare) is
 * an InvalidInputError.
 */
import { type SQL, sql } from "drizzle-orm";
import type { Comparison, StoreDialect, ValueField } from "../../dialects/store-dialect.js";
import { describeValue, InvalidInputError } from "../../errors.js";

type Scalar = string | number | boolean | null;

const RANGES: Record<string, Comparison> = { $gt: ">", $gte: ">=", $lt: "<", $lte: "<=" };

const FALSE = sql`(1 = 0)`;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function scalar(value: unknown, where: string): Scalar {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new InvalidInputError(`filter ${where}: ${value} is not a JSON number`);
    return value;
  }
  throw new InvalidInputError(
    `filter ${where}: only strings, numbers, booleans and null can be compared, got ${describeValue(value)}`,
  );
}

/** True when the member equals `value` (same JSON type); never NULL. */
function equals(field: ValueField, value: Scalar): SQL {
  let test: SQL;
  if (value === null) test = field.is("null");
  else if (typeof value === "string") test = field.text("=", value);
  else if (typeof value === "number") test = field.number("=", value);
  else test = field.boolean(value);
  return sql`coalesce(${test}, ${FALSE})`;
}

function anyOf(field: ValueField, values: unknown, where: string): SQL {
  if (!Array.isArray(values))
    throw new InvalidInputError(`filter ${where}: expects an array, got ${describeValue(values)}`);
  if (values.length === 0) return FALSE;
  return sql`(${sql.join(
    values.map((value) => equals(field, scalar(value, where))),
    sql` or `,
  )})`;
}

function operator(field: ValueField, name: string, operand: unknown, key: string): SQL {
  const where = `"${key}" ${name}`;
  switch (name) {
    case "$eq":
      return equals(field, scalar(operand, where));
    case "$ne":
      return sql`not ${equals(field, scalar(operand, where))}`;
    case "$in":
      return anyOf(field, operand, where);
    case "$nin":
      return sql`not ${anyOf(field, operand, where)}`;
    case "$exists":
      if (typeof operand !== "boolean") {
        throw new InvalidInputError(`filter ${where}: expects true or false, got ${describeValue(operand)}`);
      }
      return operand ? field.exists() : sql`not ${field.exists()}`;
  }
  const comparison = RANGES[name];
  if (!comparison) {
    throw new InvalidInputError(
      `filter "${key}": unknown operator ${name} (known: $eq $ne $gt $gte $lt $lte $in $nin $exists)`,
    );
  }
  const value = scalar(operand, where);
  if (typeof value === "number") return sql`coalesce(${field.number(comparison, value)}, ${FALSE})`;
  if (typeof value === "string") return sql`coalesce(${field.text(comparison, value)}, ${FALSE})`;
  throw new InvalidInputError(`filter ${where}: compares numbers or strings, got ${describeValue(value)}`);
}

/** The predicates of `filter`, all of which an item must satisfy (none for an empty filter). */
export function filterPredicates(store: StoreDialect, filter: unknown): SQL[] {
  if (filter === undefined || filter === null) return [];
  if (!isPlainObject(filter)) throw new InvalidInputError(`filter must be an object, got ${describeValue(filter)}`);
  const predicates: SQL[] = [];
  for (const [key, condition] of Object.entries(filter)) {
    const field = store.field(key);
    if (isPlainObject(condition)) {
      const names = Object.keys(condition);
      if (names.length === 0 || !names.every((name) => name.startsWith("$"))) {
        throw new InvalidInputError(
          `filter "${key}": an object is either operators ($eq, $gt, ...) or a value to compare, and values to compare must be strings, numbers, booleans or null`,
        );
      }
      for (const name of names) predicates.push(operator(field, name, condition[name], key));
    } else {
      predicates.push(equals(field, scalar(condition, `"${key}"`)));
    }
  }
  return predicates;
}
