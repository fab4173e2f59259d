/**
 * The transfer file: JSON Lines, documented in docs/transfer-format.md. A header,
 * then for each thread a `thread` line, its rows, and an `end` line with their
 * counts (or an `abort` line when the exporter could not read the thread), then a
 * `footer` line. Byte values are base64 of what our serializer wrote.
 */
import { InvalidInputError } from "../errors.js";
import { parseStoredChain } from "../savers/values/deltas.js";
import { checkJsonDepth, MAX_NESTING_DEPTH } from "../serde/bounds.js";
import type { RecordCounts, TransferRecord } from "./records.js";

export const FORMAT_NAME = "langgraph-checkpoint-drizzle/transfer";
export const FORMAT_VERSION = 1;

export type FileLine =
  | { kind: "header"; format: string; version: number }
  | { kind: "thread"; threadId: string }
  | { kind: "record"; record: TransferRecord }
  | { kind: "end"; threadId: string; counts: RecordCounts }
  | { kind: "abort"; threadId: string; error: string }
  | { kind: "footer"; threads: number };

/** JSON values with object keys sorted: databases reorder JSON keys (PostgreSQL's jsonb), the file does not. */
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== "object") return value;
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    Object.defineProperty(sorted, key, {
      value: sortKeys((value as Record<string, unknown>)[key]),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return sorted;
}

const base64 = (bytes: Uint8Array | null) => (bytes === null ? null : Buffer.from(bytes).toString("base64"));

export function headerLine(): string {
  return JSON.stringify({ kind: "header", format: FORMAT_NAME, version: FORMAT_VERSION });
}

export function threadLine(threadId: string): string {
  return JSON.stringify({ kind: "thread", thread_id: threadId });
}

export function endLine(threadId: string, counts: RecordCounts): string {
  return JSON.stringify({ kind: "end", thread_id: threadId, ...counts });
}

export function abortLine(threadId: string, error: string): string {
  return JSON.stringify({ kind: "abort", thread_id: threadId, error });
}

export function footerLine(threads: number): string {
  return JSON.stringify({ kind: "footer", threads });
}

export function recordLine(record: TransferRecord): string {
  switch (record.kind) {
    case "checkpoint":
      return JSON.stringify({
        kind: "checkpoint",
        checkpoint_ns: record.ns,
        checkpoint_id: record.checkpointId,
        parent_checkpoint_id: record.parentCheckpointId,
        created_at: new Date(record.createdAt).toISOString(),
        type: record.type,
        checkpoint: base64(record.checkpoint),
        channel_versions: sortKeys(record.channelVersions),
        metadata: sortKeys(record.metadata),
      });
    case "blob":
      return JSON.stringify({
        kind: "blob",
        checkpoint_ns: record.ns,
        channel: record.channel,
        version: record.version,
        type: record.type,
        value: base64(record.value),
        ...(record.deltaChain === undefined ? {} : { delta_chain: record.deltaChain }),
      });
    case "write":
      return JSON.stringify({
        kind: "write",
        checkpoint_ns: record.ns,
        checkpoint_id: record.checkpointId,
        task_id: record.taskId,
        task_path: record.taskPath,
        idx: record.idx,
        channel: record.channel,
        type: record.type,
        value: base64(record.value),
      });
  }
}

/** A date and time as toISOString writes it (a zone offset accepted too). */
const ISO_INSTANT = /^(?:[+-]\d{6}|\d{4})-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d{1,9})?)?(?:Z|[+-]\d\d:\d\d)$/;

/** Reads the fields of one line, each with a check that names the line and the field. */
class Fields {
  constructor(
    private readonly object: Record<string, unknown>,
    private readonly line: number,
  ) {}

  fail(message: string): never {
    throw new InvalidInputError(`line ${this.line}: ${message}`);
  }

  string(name: string): string {
    const value = this.object[name];
    if (typeof value !== "string") this.fail(`"${name}" must be a string`);
    return value;
  }

  has(name: string): boolean {
    return Object.hasOwn(this.object, name);
  }

  nullableString(name: string): string | null {
    return this.object[name] === null ? null : this.string(name);
  }

  integer(name: string): number {
    const value = this.object[name];
    if (typeof value !== "number" || !Number.isSafeInteger(value)) this.fail(`"${name}" must be an integer`);
    return value;
  }

  bytes(name: string): Uint8Array {
    const text = this.string(name);
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) this.fail(`"${name}" is not base64`);
    return Buffer.from(text, "base64");
  }

  nullableBytes(name: string): Uint8Array | null {
    return this.object[name] === null ? null : this.bytes(name);
  }

  object_(name: string): Record<string, unknown> {
    const value = this.object[name];
    if (value === null || typeof value !== "object" || Array.isArray(value)) this.fail(`"${name}" must be an object`);
    return value as Record<string, unknown>;
  }

  instant(name: string): number {
    const text = this.string(name);
    // ISO 8601 only: Date.parse also takes "1" (2001-01-01), "0" or "Tue Mar 1 2022",
    // which would be stored as times nobody wrote.
    const ms = ISO_INSTANT.test(text) ? Date.parse(text) : Number.NaN;
    if (Number.isNaN(ms)) this.fail(`"${name}" is not a date: ${JSON.stringify(text)}`);
    return ms;
  }

  versions(name: string): Record<string, string | number> {
    const versions = this.object_(name);
    for (const [channel, version] of Object.entries(versions)) {
      if (typeof version !== "string" && typeof version !== "number") {
        this.fail(`"${name}.${channel}" must be a string or a number`);
      }
    }
    return versions as Record<string, string | number>;
  }
}

/** Arrays and objects one line may hold: about 70 MB once parsed; metadata holds far fewer. */
export const MAX_LINE_CONTAINERS = 1_000_000;

/** One line of a transfer file; `line` is its 1-based number, for messages. */
export function parseLine(text: string, line: number): FileLine {
  // Before JSON.parse: brackets within the length bound, nested deep or side by side
  // ("[],[],..."), would make it build 40 to 70 bytes of objects per container (gigabytes,
  // a fatal out-of-memory). No line we write is deeper than its metadata, itself at most
  // MAX_NESTING_DEPTH deep; MAX_LINE_CONTAINERS bounds what one line costs to parse.
  try {
    checkJsonDepth(text, MAX_NESTING_DEPTH + 1, MAX_LINE_CONTAINERS);
  } catch (error) {
    throw new InvalidInputError(`line ${line}: ${error instanceof Error ? error.message : String(error)}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new InvalidInputError(`line ${line}: not a JSON document (is the file truncated?)`);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new InvalidInputError(`line ${line}: expected a JSON object`);
  }
  const f = new Fields(parsed as Record<string, unknown>, line);
  const kind = f.string("kind");
  switch (kind) {
    case "header":
      return { kind, format: f.string("format"), version: f.integer("version") };
    case "thread":
      return { kind, threadId: f.string("thread_id") };
    case "end":
      return {
        kind,
        threadId: f.string("thread_id"),
        counts: { checkpoints: f.integer("checkpoints"), blobs: f.integer("blobs"), writes: f.integer("writes") },
      };
    case "abort":
      return { kind, threadId: f.string("thread_id"), error: f.string("error") };
    case "footer":
      return { kind, threads: f.integer("threads") };
    case "checkpoint":
    case "blob":
    case "write":
      return { kind: "record", record: parseRecord(kind, f) };
    default:
      return f.fail(`unknown kind ${JSON.stringify(kind)}`);
  }
}

/** A blob's delta_chain, checked as the saver reads it, so a bad file is refused before anything is written. */
function parseDeltaChain(f: Fields): string {
  const text = f.string("delta_chain");
  try {
    parseStoredChain(text);
  } catch (error) {
    f.fail(`"delta_chain" is not a valid chain: ${error instanceof Error ? error.message : String(error)}`);
  }
  return text;
}

function parseRecord(kind: TransferRecord["kind"], f: Fields): TransferRecord {
  if (kind === "checkpoint") {
    return {
      kind,
      ns: f.string("checkpoint_ns"),
      checkpointId: f.string("checkpoint_id"),
      parentCheckpointId: f.nullableString("parent_checkpoint_id"),
      createdAt: f.instant("created_at"),
      type: f.string("type"),
      checkpoint: f.bytes("checkpoint"),
      channelVersions: f.versions("channel_versions"),
      metadata: f.object_("metadata"),
    };
  }
  if (kind === "blob") {
    return {
      kind,
      ns: f.string("checkpoint_ns"),
      channel: f.string("channel"),
      version: f.string("version"),
      type: f.string("type"),
      value: f.nullableBytes("value"),
      ...(f.has("delta_chain") ? { deltaChain: parseDeltaChain(f) } : {}),
    };
  }
  return {
    kind,
    ns: f.string("checkpoint_ns"),
    checkpointId: f.string("checkpoint_id"),
    taskId: f.string("task_id"),
    taskPath: f.string("task_path"),
    idx: f.integer("idx"),
    channel: f.string("channel"),
    type: f.string("type"),
    value: f.nullableBytes("value"),
  };
}

/** Checks the first line of a file. */
export function checkHeader(line: FileLine | undefined): void {
  if (line?.kind !== "header" || line.format !== FORMAT_NAME) {
    throw new InvalidInputError(`line 1: not a transfer file (expected a "${FORMAT_NAME}" header)`);
  }
  if (line.version !== FORMAT_VERSION) {
    throw new InvalidInputError(
      `line 1: transfer format version ${line.version} is not supported (this version reads ${FORMAT_VERSION})`,
    );
  }
}
