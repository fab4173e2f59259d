import type { Checkpoint } from "@langchain/langgraph-checkpoint";
import { uuid6 } from "@langchain/langgraph-checkpoint";

/**
 * The documented filter semantics, written as plain TypeScript so the tests can
 * compare what `saver.list` returns with what it should return.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };
/** A `list` filter: keys whose value is `undefined` are ignored. */
export type Filter = { [key: string]: Json | undefined };

/** A minimal v4 checkpoint with a fresh, time-ordered id. */
export function emptyCheckpoint(id: string = uuid6(-1)): Checkpoint {
  return { v: 4, id, ts: new Date().toISOString(), channel_values: {}, channel_versions: {}, versions_seen: {} };
}

export function isObject(value: Json | undefined): value is JsonObject {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * JSON equality: numbers by value, strings and booleans exactly, arrays element by
 * element in order, objects with the same keys (in any order) and equal values.
 */
export function jsonEqual(a: Json, b: Json): boolean {
  if (a === null || b === null) return a === b;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => jsonEqual(item, b[i]));
  }
  if (typeof a === "object" || typeof b === "object") {
    if (typeof a !== "object" || typeof b !== "object") return false;
    const keys = Object.keys(a);
    if (keys.length !== Object.keys(b).length) return false;
    return keys.every((key) => Object.hasOwn(b, key) && jsonEqual(a[key], b[key]));
  }
  // Primitives of different types never match ("3" vs 3, true vs 1); -0 === 0.
  return a === b;
}

/** Every filter key with a defined value is a top-level key of the metadata with a JSON-equal value. */
export function matchesFilter(metadata: JsonObject, filter: Filter): boolean {
  return Object.entries(filter).every(
    ([key, value]) => value === undefined || (Object.hasOwn(metadata, key) && jsonEqual(metadata[key], value)),
  );
}

export interface StoredCheckpoint {
  threadId: string;
  checkpointId: string;
  metadata: JsonObject;
}

export interface ListQuery {
  threadId?: string;
  filter?: Filter;
  before?: string;
  limit?: number;
}

/** What `list` must return: matching checkpoints, newest (largest id) first, ids strictly before `before`, at most `limit`. */
export function expectedList(stored: readonly StoredCheckpoint[], query: ListQuery): StoredCheckpoint[] {
  const { threadId, filter = {}, before, limit } = query;
  return stored
    .filter(
      (row) =>
        (threadId === undefined || row.threadId === threadId) &&
        (before === undefined || row.checkpointId < before) &&
        matchesFilter(row.metadata, filter),
    )
    .sort((a, b) =>
      a.checkpointId !== b.checkpointId
        ? a.checkpointId < b.checkpointId
          ? 1
          : -1
        : a.threadId < b.threadId
          ? 1
          : a.threadId > b.threadId
            ? -1
            : 0,
    )
    .slice(0, limit ?? Number.POSITIVE_INFINITY);
}

export function describeFilter(filter: Filter): string {
  return `{${Object.entries(filter)
    .map(([key, value]) => `${JSON.stringify(key)}: ${value === undefined ? "undefined" : JSON.stringify(value)}`)
    .join(", ")}}`;
}
