/** Input validation and small conversions shared by the saver's modules. */
import type { RunnableConfig } from "@langchain/core/runnables";
import { type Column, type SQL, sql } from "drizzle-orm";
import { describeValue, InvalidInputError } from "../../errors.js";

/** Longest id accepted for threads, checkpoints and tasks (every dialect indexes 255). */
const MAX_ID_LENGTH = 255;

export interface CheckpointKey {
  threadId: string;
  ns: string;
  checkpointId: string;
}

export function requireId(value: unknown, what: string): string {
  if (typeof value !== "string" || value.length === 0) {
    throw new InvalidInputError(`${what} must be a non-empty string, got ${describeValue(value)}`);
  }
  // Databases store text as UTF-8: a lone surrogate would be replaced and U+0000 refused.
  requireStorableText(value, what);
  if ([...value].length > MAX_ID_LENGTH) {
    throw new InvalidInputError(`${what} is longer than ${MAX_ID_LENGTH} characters`);
  }
  return value;
}

/**
 * Most UTF-8 bytes of one row's key: thread id, namespace, checkpoint id, and the task
 * id (a pending write) or channel name and version (a channel value) together.
 * PostgreSQL's B-tree entries hold at most 2704 bytes, with about 40 of overhead.
 */
export const MAX_KEY_BYTES = 2600;

/** Refuses a key longer than {@link MAX_KEY_BYTES}, on every dialect alike. */
export function requireKeyWithinLimit(parts: string[], what: string): void {
  let bytes = 0;
  for (const part of parts) bytes += Buffer.byteLength(part, "utf8");
  if (bytes > MAX_KEY_BYTES) {
    throw new InvalidInputError(
      `${what} is ${bytes} bytes of UTF-8 (thread_id, checkpoint_ns and the ids together); the limit is 2,600 bytes`,
    );
  }
}

/** Databases store text as UTF-8: a lone surrogate would be replaced and U+0000 refused. */
export function requireStorableText(value: string, what: string): void {
  if (!value.isWellFormed() || value.includes("\u0000")) {
    throw new InvalidInputError(`${what} must be well-formed Unicode without U+0000`);
  }
}

export function optionalNamespace(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string")
    throw new InvalidInputError(`checkpoint_ns must be a string, got ${describeValue(value)}`);
  requireStorableText(value, "checkpoint_ns");
  return value;
}

export function configurableOf(config: RunnableConfig | undefined, operation: string): Record<string, unknown> {
  const configurable = config?.configurable;
  if (configurable === undefined || configurable === null || typeof configurable !== "object") {
    throw new InvalidInputError(`${operation}: config.configurable with a thread_id is required`);
  }
  return configurable;
}

export function configOf(key: CheckpointKey): RunnableConfig {
  return { configurable: { thread_id: key.threadId, checkpoint_ns: key.ns, checkpoint_id: key.checkpointId } };
}

export function asBytes(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return value;
  throw new TypeError(`expected binary column data, got ${describeValue(value)}`);
}

/** Drivers bind Buffers as binary everywhere; a plain Uint8Array is not always recognised. */
export function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** `column as "alias"`, quoted: some aliases (blob, type) are reserved words in MySQL. */
export function as(column: Column, alias: string): SQL {
  return sql`${column} as ${sql.identifier(alias)}`;
}

/** A map key for a checkpoint (see tupleKey). */
export function keyOf(key: CheckpointKey): string {
  return tupleKey([key.threadId, key.ns, key.checkpointId]);
}

/** The key of a row that has thread_id, checkpoint_ns and checkpoint_id columns. */
export function rowKey(row: Record<string, unknown>): CheckpointKey {
  return {
    threadId: row.thread_id as string,
    ns: row.checkpoint_ns as string,
    checkpointId: row.checkpoint_id as string,
  };
}

/** JSON columns come back parsed (postgres.js, MySQL 8) or as text (MariaDB, SQLite). */
export function parseJsonColumn(value: unknown): unknown {
  return typeof value === "string" ? JSON.parse(value) : value;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * A map key for a tuple of strings: each part with its length in front, so no two
 * tuples share a key (cheaper than JSON.stringify of the array, which it replaces). A
 * tuple with a part that is not a string gets its JSON text, which starts with "[",
 * where a length-prefixed key starts with a digit: the two kinds never meet.
 */
export function tupleKey(parts: readonly unknown[]): string {
  let key = "";
  for (const part of parts) {
    if (typeof part !== "string") return JSON.stringify(parts);
    key += `${part.length}:${part}`;
  }
  return key;
}
