import fc from "fast-check";
import { type Filter, isObject, type Json, type JsonObject } from "./reference.js";

/**
 * Generators for metadata and filters. Keys and strings lean on what has broken
 * JSON filters elsewhere: path syntax in keys, quotes, escapes, empty keys, astral
 * characters, strings a database JSON type cannot hold (U+0000, lone surrogates),
 * strings that look like the saver's own escape marker, and case or trailing-space
 * variants that a case-insensitive collation would merge.
 */

/** The prefix the saver puts before escaped strings (src/savers/values/metadata.ts); real text may start with it too. */
const LOOKS_ESCAPED = '\u{10FFFD}json:"x"';

const AWKWARD_KEYS = [
  "a.b",
  "$",
  "$.a",
  "'",
  '"',
  "]",
  "[0]",
  "\\",
  "*",
  "**",
  "",
  " ",
  "a b",
  'a"b',
  "a'b",
  "\\u0061",
  "\n",
  "a",
  "A",
  "a ",
  "ключ",
  "😀",
  "𝒳",
  "e\u0301",
  "\u0000k",
  "\udc00",
  LOOKS_ESCAPED,
  "toString",
  "constructor",
] as const;

const COMMON_KEYS = ["source", "step", "parents", "user", "writes", "tags", "score"] as const;

const SPECIAL_STRINGS = [
  "",
  "a",
  "A",
  "a ",
  " a",
  "input",
  "loop",
  "Loop",
  "loop ",
  "update",
  "fork",
  "3",
  "3.0",
  "1",
  "true",
  "false",
  "null",
  "{}",
  "[]",
  "😀",
  "𝒳y",
  "é",
  "e\u0301",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "x\udfff",
  "'; drop table checkpoints; --",
  '"',
  "\\",
  LOOKS_ESCAPED,
  "x".repeat(64),
  "x".repeat(65),
  "😀".repeat(64),
] as const;

const SPECIAL_NUMBERS = [
  0,
  -0,
  1,
  -1,
  3,
  0.1,
  0.5,
  1.5,
  2.5,
  0.1 + 0.2,
  1e21,
  -1e-7,
  2 ** 53,
  2 ** 53 + 2,
  // Integers whose shortest decimal form is not their exact value (2 ** 55 prints as ...970).
  2 ** 55,
  2 ** 60,
  Number.MAX_SAFE_INTEGER,
  Number.MIN_VALUE,
  Number.MAX_VALUE,
  1 + Number.EPSILON,
] as const;

const stringArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...SPECIAL_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 6 }) },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme-ascii", maxLength: 4 }) },
);

const keyArb: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...AWKWARD_KEYS) },
  { weight: 2, arbitrary: fc.constantFrom(...COMMON_KEYS) },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 4 }) },
);

const numberArb: fc.Arbitrary<number> = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: -3, max: 5 }) },
  { weight: 2, arbitrary: fc.constantFrom(...SPECIAL_NUMBERS) },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
);

const leafArb: fc.Arbitrary<Json> = fc.oneof(
  { weight: 3, arbitrary: stringArb },
  { weight: 3, arbitrary: numberArb },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
);

/** Builds a plain object from entries (own properties only, whatever the keys are). */
function objectOf(entries: [string, Json][]): JsonObject {
  return Object.fromEntries(entries) as JsonObject;
}

const jsonArb: fc.Arbitrary<Json> = fc.letrec<{ value: Json; array: Json[]; object: JsonObject }>((tie) => ({
  value: fc.oneof(
    { maxDepth: 3, depthIdentifier: "json" },
    { weight: 4, arbitrary: leafArb },
    { weight: 1, arbitrary: tie("array") },
    { weight: 1, arbitrary: tie("object") },
  ),
  array: fc.array(tie("value"), { maxLength: 3, depthIdentifier: "json" }),
  object: fc
    .uniqueArray(fc.tuple(keyArb, tie("value")), { maxLength: 3, selector: ([key]) => key, depthIdentifier: "json" })
    .map(objectOf),
})).value;

/** Metadata as LangGraph writes it (source, step, parents) plus arbitrary extra keys. */
export const metadataArb: fc.Arbitrary<JsonObject> = fc
  .record({
    source: fc.option(
      fc.oneof(
        { weight: 5, arbitrary: fc.constantFrom<Json>("input", "loop", "update", "fork", "Loop", "loop ") },
        { weight: 1, arbitrary: jsonArb },
      ),
      { freq: 5, nil: undefined },
    ),
    step: fc.option(
      fc.oneof(
        { weight: 5, arbitrary: fc.integer({ min: -1, max: 4 }) },
        { weight: 2, arbitrary: fc.constantFrom<Json>(3, 2.5, -0, "3", true, false, 1, 0, null, [3], { step: 3 }) },
        { weight: 1, arbitrary: numberArb },
      ),
      { freq: 5, nil: undefined },
    ),
    parents: fc.option(
      fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom<Json>({}, { "": "abc" }, { "": "abc", "sub:1": "def" }) },
        { weight: 1, arbitrary: jsonArb },
      ),
      { freq: 3, nil: undefined },
    ),
    // Short arrays of small values: reordered copies are likely to differ.
    tags: fc.option(
      fc.array(fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constantFrom("a", "b"), fc.constant(null)), {
        minLength: 2,
        maxLength: 3,
      }),
      {
        freq: 2,
        nil: undefined,
      },
    ),
    rest: fc.uniqueArray(fc.tuple(keyArb, jsonArb), { maxLength: 3, selector: ([key]) => key }),
  })
  .map(({ source, step, parents, tags, rest }) => {
    const entries = new Map<string, Json>(rest);
    if (tags !== undefined) entries.set("tags", tags);
    if (source !== undefined) entries.set("source", source);
    if (step !== undefined) entries.set("step", step);
    if (parents !== undefined) entries.set("parents", parents);
    return objectOf([...entries]);
  });

/** How a filter value is derived from a value that is really stored. */
export type Mutation =
  | "same"
  | "permuteKeys"
  | "equalNumbers"
  | "reverseArrays"
  | "dropMember"
  | "addMember"
  | "typeFlip"
  | "nextNumber"
  | "caseOrSpace"
  | "nullify"
  | "wrapInArray";

/**
 * Changes that keep a value JSON-equal (objects reordered, numbers rewritten), plus
 * reversing arrays: an identity on values without arrays, so applied often enough
 * to catch order-insensitive array matching.
 */
const COMMON: readonly Mutation[] = ["same", "permuteKeys", "equalNumbers", "reverseArrays"];
/** Changes that usually break equality (unless the value is e.g. a palindrome array or not a number). */
const BREAKING: readonly Mutation[] = [
  "dropMember",
  "dropMember",
  "addMember",
  "typeFlip",
  "typeFlip",
  "nextNumber",
  "caseOrSpace",
  "nullify",
  "wrapInArray",
];

/** Deep copy with every object's keys in reverse insertion order. */
function permuteKeys(value: Json): Json {
  if (Array.isArray(value)) return value.map(permuteKeys);
  if (isObject(value))
    return objectOf(
      Object.entries(value)
        .reverse()
        .map(([k, v]) => [k, permuteKeys(v)]),
    );
  return value;
}

function mapNumbers(value: Json, f: (n: number) => number): Json {
  if (typeof value === "number") return f(value);
  if (Array.isArray(value)) return value.map((item) => mapNumbers(item, f));
  if (isObject(value)) return objectOf(Object.entries(value).map(([k, v]) => [k, mapNumbers(v, f)]));
  return value;
}

function reverseArrays(value: Json): Json {
  if (Array.isArray(value)) return value.map(reverseArrays).reverse();
  if (isObject(value)) return objectOf(Object.entries(value).map(([k, v]) => [k, reverseArrays(v)]));
  return value;
}

/** Next representable double away from zero (or the smallest one after 0). */
function nextNumber(n: number): number {
  if (n === 0) return Number.MIN_VALUE;
  const buffer = new DataView(new ArrayBuffer(8));
  buffer.setFloat64(0, n);
  buffer.setBigUint64(0, buffer.getBigUint64(0) + 1n);
  const next = buffer.getFloat64(0);
  return Number.isFinite(next) ? next : n - n * Number.EPSILON;
}

/** The same value written another way in JavaScript (3 vs 3.0 vs 3e0 are one number): by value, still equal. */
function equalNumber(n: number): number {
  return Number(n.toExponential());
}

function typeFlip(value: Json): Json {
  if (value === null) return 0;
  if (typeof value === "number") return value === 1 ? true : value === 0 ? false : String(value);
  if (typeof value === "boolean") return value ? 1 : "false";
  if (typeof value === "string") {
    if (value === "null") return null;
    if (value === "true") return true;
    const n = Number(value);
    return value.trim() !== "" && Number.isFinite(n) ? n : [value];
  }
  if (Array.isArray(value)) return objectOf(value.map((item, i) => [String(i), item]));
  return Object.values(value);
}

function mutate(value: Json, mutation: Mutation): Json {
  switch (mutation) {
    case "same":
      return structuredClone(value);
    case "permuteKeys":
      return permuteKeys(value);
    case "equalNumbers":
      return mapNumbers(value, equalNumber);
    case "reverseArrays":
      return reverseArrays(value);
    case "dropMember":
      // A sub-object or a prefix of an array: containment would match it, equality must not.
      if (Array.isArray(value)) return value.slice(0, -1);
      if (isObject(value)) return objectOf(Object.entries(value).slice(1));
      return value;
    case "addMember":
      if (Array.isArray(value)) return [...value, null];
      if (isObject(value)) return { ...value, "extra key": 1 };
      return value;
    case "typeFlip":
      return typeFlip(value);
    case "nextNumber":
      return mapNumbers(value, nextNumber);
    case "caseOrSpace":
      if (typeof value === "string") return value.toUpperCase() !== value ? value.toUpperCase() : `${value} `;
      return value;
    case "nullify":
      return null;
    case "wrapInArray":
      return [value];
  }
}

/** `arbitrary` in `times` out of `outOf` cases, null otherwise. */
function sometimes<T>(times: number, outOf: number, arbitrary: fc.Arbitrary<T>): fc.Arbitrary<T | null> {
  return fc.oneof({ weight: outOf - times, arbitrary: fc.constant(null) }, { weight: times, arbitrary });
}

/**
 * A filter made from metadata that is really stored: a subset of its keys in a new
 * order, each value kept or changed in one way. Sometimes with a key the metadata
 * lacks (with null: a missing key never matches null), or keys set to undefined
 * (ignored).
 */
function derivedFilterArb(stored: readonly JsonObject[]): fc.Arbitrary<Filter> {
  return fc.constantFrom(...stored).chain((metadata) => {
    const available = Object.keys(metadata);
    return fc
      .record({
        keys: fc.shuffledSubarray(available, {
          minLength: Math.min(1, available.length),
          maxLength: Math.min(3, available.length),
        }),
        common: fc.array(fc.constantFrom(...COMMON), { minLength: 8, maxLength: 8 }),
        // At most one key's value is changed in a way that usually breaks the match.
        breaking: sometimes(1, 3, fc.tuple(fc.nat(7), fc.constantFrom(...BREAKING))),
        missing: sometimes(1, 6, fc.tuple(keyArb, fc.oneof(fc.constant(null), jsonArb))),
        ignored: sometimes(1, 4, keyArb),
      })
      .map(({ keys, common, breaking, missing, ignored }) => {
        const entries: [string, Json | undefined][] = keys.map((key, i) => {
          const mutation = breaking !== null && breaking[0] % keys.length === i ? breaking[1] : common[i % 8];
          return [key, mutate(metadata[key], mutation)];
        });
        if (missing !== null && !Object.hasOwn(metadata, missing[0])) entries.push(missing);
        if (ignored !== null && !keys.includes(ignored)) entries.push([ignored, undefined]);
        return Object.fromEntries(entries) as Filter;
      });
  });
}

/** Filters for a set of stored metadata: mostly derived from it, sometimes arbitrary or empty. */
export function filterArb(stored: readonly JsonObject[]): fc.Arbitrary<Filter> {
  const arbitrary = fc
    .uniqueArray(fc.tuple(keyArb, jsonArb), { maxLength: 2, selector: ([key]) => key })
    .map((entries) => objectOf(entries) as Filter);
  return fc.oneof(
    { weight: 6, arbitrary: derivedFilterArb(stored) },
    { weight: 1, arbitrary },
    { weight: 1, arbitrary: fc.constantFrom<Filter>({}, { source: undefined }) },
  );
}
