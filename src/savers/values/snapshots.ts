/**
 * What an element of an incrementally stored array held when it was stored, to tell
 * whether a later array still holds it unchanged (deltas.ts). Identity is not enough: a
 * node may change an element it was given in place and append to the list in the same
 * step, and storing only the appended elements would lose that change.
 *
 * A snapshot copies containers and keeps primitives (strings are shared, never copied),
 * so taking one costs a walk of the element, and comparing an unchanged element costs
 * the same walk with pointer-equal strings. It covers what the serializer writes of a
 * value: own enumerable fields of objects, array items, a Date's time, bytes, and of a
 * LangChain message the fields its `toJSON` writes. A value whose stored form may depend
 * on what a walk cannot see (another class's `toJSON`, a Map or Set, a function) has no
 * snapshot: its array is stored whole.
 */
import { isStoredAsMessage } from "../../serde/messages.js";

/** An element no snapshot describes; never equal to anything. */
const NO_SNAPSHOT: unique symbol = Symbol("no snapshot");

/** Deeper than the serializer stores (1,000 levels): a cycle, or a value it refuses. */
const MAX_DEPTH = 1001;

class ObjectSnapshot {
  constructor(
    readonly prototype: object | null,
    readonly keys: string[],
    readonly fields: unknown[],
  ) {}
}

class ArraySnapshot {
  constructor(
    readonly prototype: object | null,
    readonly items: unknown[],
  ) {}
}

/**
 * A LangChain message: what is stored of it is its `toJSON`'s kwargs, one per key of its
 * `lc_kwargs`, each the message's own field of that name when it has one (see fieldOf).
 */
class MessageSnapshot {
  constructor(
    readonly prototype: object | null,
    readonly keys: string[],
    readonly fields: unknown[],
  ) {}
}

class DateSnapshot {
  constructor(readonly time: number) {}
}

class BytesSnapshot {
  constructor(
    readonly prototype: object | null,
    readonly bytes: Buffer,
  ) {}
}

/** Thrown inside a walk that meets something no snapshot describes. */
class Unverifiable extends Error {}

function take(value: unknown, depth: number): unknown {
  if (typeof value === "function" || typeof value === "symbol") throw new Unverifiable();
  if (typeof value !== "object" || value === null) return value;
  if (depth > MAX_DEPTH) throw new Unverifiable();
  if (Array.isArray(value)) {
    const items = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) items[i] = take(value[i], depth + 1);
    return new ArraySnapshot(Object.getPrototypeOf(value), items);
  }
  if (value instanceof Date) return new DateSnapshot(value.getTime());
  if (ArrayBuffer.isView(value)) {
    const view = value as ArrayBufferView;
    const bytes = Buffer.from(view.buffer, view.byteOffset, view.byteLength);
    return new BytesSnapshot(Object.getPrototypeOf(value), Buffer.from(bytes));
  }
  if (value instanceof Map || value instanceof Set) throw new Unverifiable();
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") {
    if (!isStoredAsMessage(value)) throw new Unverifiable();
    const keys = Object.keys(lcKwargs(value));
    const fields = new Array<unknown>(keys.length);
    for (let i = 0; i < keys.length; i++) fields[i] = take(fieldOf(value, keys[i]), depth + 1);
    return new MessageSnapshot(Object.getPrototypeOf(value), keys, fields);
  }
  const keys = Object.keys(value);
  const fields = new Array<unknown>(keys.length);
  for (let i = 0; i < keys.length; i++) fields[i] = take((value as Record<string, unknown>)[keys[i]], depth + 1);
  return new ObjectSnapshot(Object.getPrototypeOf(value), keys, fields);
}

function lcKwargs(value: object): Record<string, unknown> {
  return (value as { lc_kwargs: Record<string, unknown> }).lc_kwargs;
}

/** A message's field as LangChain's toJSON reads it: its own (or inherited) property, else lc_kwargs'. */
function fieldOf(value: object, key: string): unknown {
  return key in value ? (value as Record<string, unknown>)[key] : lcKwargs(value)[key];
}

/** What `value` holds now, or NO_SNAPSHOT when its stored form cannot be told from a walk. */
export function snapshotOf(value: unknown): unknown {
  try {
    return take(value, 0);
  } catch (error) {
    if (error instanceof Unverifiable || error instanceof RangeError) return NO_SNAPSHOT;
    throw error;
  }
}

/** Whether `value` still holds what `snapshot` recorded (same fields in the same order, same items). */
export function unchangedSince(value: unknown, snapshot: unknown): boolean {
  if (snapshot === NO_SNAPSHOT) return false;
  if (typeof value !== "object" || value === null) return Object.is(value, snapshot);
  if (snapshot instanceof ArraySnapshot) {
    if (!Array.isArray(value) || Object.getPrototypeOf(value) !== snapshot.prototype) return false;
    const { items } = snapshot;
    if (value.length !== items.length) return false;
    for (let i = 0; i < items.length; i++) if (!unchangedSince(value[i], items[i])) return false;
    return true;
  }
  if (snapshot instanceof ObjectSnapshot) {
    if (Array.isArray(value) || Object.getPrototypeOf(value) !== snapshot.prototype) return false;
    const { keys, fields } = snapshot;
    // for-in walks the own keys in Object.keys' order without building an array of them
    // (inherited enumerable keys, if any, are skipped).
    let i = 0;
    for (const key in value) {
      if (!Object.hasOwn(value, key)) continue;
      if (key !== keys[i] || !unchangedSince((value as Record<string, unknown>)[key], fields[i])) return false;
      i++;
    }
    return i === keys.length;
  }
  if (snapshot instanceof MessageSnapshot) {
    if (Object.getPrototypeOf(value) !== snapshot.prototype) return false;
    const { keys, fields } = snapshot;
    let i = 0;
    for (const key in lcKwargs(value)) {
      if (key !== keys[i] || !unchangedSince(fieldOf(value, key), fields[i])) return false;
      i++;
    }
    return i === keys.length;
  }
  if (snapshot instanceof DateSnapshot) return value instanceof Date && Object.is(value.getTime(), snapshot.time);
  if (snapshot instanceof BytesSnapshot) {
    if (!ArrayBuffer.isView(value) || Object.getPrototypeOf(value) !== snapshot.prototype) return false;
    const view = value as ArrayBufferView;
    return Buffer.from(view.buffer, view.byteOffset, view.byteLength).equals(snapshot.bytes);
  }
  return false;
}
