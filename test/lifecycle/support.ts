import { createHash } from "node:crypto";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  type ChannelVersions,
  type Checkpoint,
  type CheckpointMetadata,
  type CheckpointTuple,
  emptyCheckpoint,
  type PendingWrite,
  uuid6,
} from "@langchain/langgraph-checkpoint";
import Database from "better-sqlite3";
import { type Column, getTableColumns, type Logger, type Table } from "drizzle-orm";
import { drizzle as drizzleSqlite } from "drizzle-orm/better-sqlite3";
import { drizzle as drizzleMysql } from "drizzle-orm/mysql2";
import { drizzle as drizzlePg } from "drizzle-orm/postgres-js";
import mysql from "mysql2/promise";
import postgres from "postgres";
import { afterAll, beforeAll, expect } from "vitest";
import type { Dialect } from "../../src/dialects/dialect.js";
import { DrizzleSaver, type SupportedDatabase } from "../../src/index.js";
import * as mysqlSchema from "../../src/schema/mysql.js";
import * as pgSchema from "../../src/schema/pg.js";
import * as sqliteSchema from "../../src/schema/sqlite.js";
import { type DialectName, freshSaver, mysqlIdsAsText } from "../helpers/databases.js";
import { openRaw, type RawDatabase } from "../helpers/raw.js";

/**
 * Shared by the thread-lifecycle tests: a plain driver connection to read and
 * write the saver's tables without going through the saver (the "no orphans"
 * checks, ages set with SQL, bulk copies of template threads), a drizzle instance
 * with a query logger, and a writer of hand-made histories (forks, namespaces,
 * run ids) through the saver's ordinary put/putWrites.
 */

export type Row = Record<string, unknown>;

let threadCounter = 0;
/** A thread id no other test uses (the tests of one file and dialect share a database). */
export function newThreadId(prefix: string): string {
  threadCounter += 1;
  return `${prefix}-${process.pid}-${threadCounter}-${Date.now()}`;
}

// ---------------------------------------------------------------------------
// A saver over a fresh database per describe block.
// ---------------------------------------------------------------------------

export interface FreshSaver {
  readonly saver: DrizzleSaver;
  readonly url: string;
  /** A second, plain connection to the same database. */
  readonly raw: RawDatabase;
}

/** A DrizzleSaver over a fresh database for the enclosing describe block, and a raw connection to it. */
export function useFreshSaver(dialect: DialectName): FreshSaver {
  let current: { saver: DrizzleSaver; url: string; raw: RawDatabase } | undefined;
  beforeAll(async () => {
    const fresh = await freshSaver(dialect);
    current = { ...fresh, raw: await openRaw(dialect, fresh.url) };
  });
  afterAll(async () => {
    await current?.raw.close();
    await current?.saver.close();
  });
  const get = () => {
    if (!current) throw new Error("saver not ready");
    return current;
  };
  return {
    get saver() {
      return get().saver;
    },
    get url() {
      return get().url;
    },
    get raw() {
      return get().raw;
    },
  };
}

/** Runs `body` with a saver over a database of its own (for database-wide operations), then closes both. */
export async function withFreshSaver<T>(
  dialect: DialectName,
  body: (fresh: { saver: DrizzleSaver; url: string; raw: RawDatabase }) => Promise<T>,
): Promise<T> {
  const { saver, url } = await freshSaver(dialect);
  const raw = await openRaw(dialect, url);
  try {
    return await body({ saver, url, raw });
  } finally {
    await raw.close();
    await saver.close();
  }
}

// ---------------------------------------------------------------------------
// Raw driver access.
// ---------------------------------------------------------------------------

export { openRaw, type RawDatabase };

/** `(?, ?, ...)` for a list of values. */
function placeholders(values: readonly unknown[]): string {
  return `(${values.map(() => "?").join(", ")})`;
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const result: T[][] = [];
  for (let i = 0; i < items.length; i += size) result.push(items.slice(i, i + size));
  return result;
}

/** A SQL expression for "now minus `hours` hours" in `created_at`'s type. */
export function hoursAgo(dialect: DialectName, hours: number): string {
  if (dialect === "postgres") return `now() - interval '${hours} hours'`;
  if (dialect === "mysql")
    return `(timestampdiff(microsecond, '1970-01-01 00:00:00', utc_timestamp(3)) div 1000) - ${hours * 3_600_000}`;
  return `cast(unixepoch('subsec') * 1000 as integer) - ${hours * 3_600_000}`;
}

/** A SQL expression (one `?` parameter: milliseconds since the epoch) for that instant in `created_at`'s type. */
export function atMillis(dialect: DialectName): string {
  if (dialect === "postgres") return "to_timestamp(cast(? as bigint) / 1000.0)";
  if (dialect === "mysql") return "cast(? as signed)";
  return "cast(? as integer)";
}

/**
 * Sets `created_at` of the given threads' checkpoints (optionally only some checkpoint ids)
 * to `expression`, then their per-thread rows' times to match, as if those checkpoints had
 * been written then (a put stamps both; retention reads the row).
 */
export async function setCreatedAt(
  raw: RawDatabase,
  threadIds: readonly string[],
  expression: string,
  options: { checkpointIds?: readonly string[]; params?: readonly unknown[] } = {},
): Promise<void> {
  for (const part of chunks(threadIds, 200)) {
    let text = `update checkpoints set created_at = ${expression} where thread_id in ${placeholders(part)}`;
    const params: unknown[] = [...(options.params ?? []), ...part];
    if (options.checkpointIds) {
      text += ` and checkpoint_id in ${placeholders(options.checkpointIds)}`;
      params.push(...options.checkpointIds);
    }
    await raw.query(text, params);
    await raw.query(threadTimesFromCheckpoints(part), part);
  }
}

/** Sets the per-thread rows' first and newest times from their checkpoints, as a refresh does. */
function threadTimesFromCheckpoints(threadIds: readonly string[]): string {
  const times = (aggregate: string) =>
    `(select ${aggregate}(c.created_at) from checkpoints c where c.thread_id = checkpoint_threads.thread_id)`;
  return `update checkpoint_threads set created_at = ${times("min")}, updated_at = ${times("max")}
    where thread_id in ${placeholders(threadIds)}`;
}

// ---------------------------------------------------------------------------
// Table dumps and the "no orphans" check, straight from the tables.
// ---------------------------------------------------------------------------

export const TABLES = ["checkpoints", "checkpoint_blobs", "checkpoint_writes"] as const;
export type TableName = (typeof TABLES)[number];
export type TableDump = Record<TableName, Row[]>;

const JSON_COLUMNS = new Set(["channel_versions", "metadata"]);

function plain(column: string, value: unknown): unknown {
  if (value instanceof Uint8Array) return `bytes:${Buffer.from(value).toString("hex")}`;
  if (value instanceof Date) return value.getTime();
  if (typeof value === "bigint") return Number(value);
  if (JSON_COLUMNS.has(column) && typeof value === "string") return JSON.parse(value);
  return value;
}

function plainRow(row: Row, omit: readonly string[]): Row {
  const out: Row = {};
  for (const [column, value] of Object.entries(row)) {
    if (!omit.includes(column)) out[column] = plain(column, value);
  }
  return out;
}

function sortRows(rows: Row[]): Row[] {
  return rows
    .map((row) => [JSON.stringify(row, Object.keys(row).sort()), row] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, row]) => row);
}

/**
 * Every row of the three tables (for some threads only, when given), every column,
 * bytes as hex and JSON parsed, sorted: two dumps are equal when the stored data is.
 * `omit` drops columns (e.g. thread_id, to compare a copy with its source).
 */
export async function dumpTables(
  raw: RawDatabase,
  threadIds?: readonly string[],
  omit: readonly string[] = [],
): Promise<TableDump> {
  const dump = { checkpoints: [], checkpoint_blobs: [], checkpoint_writes: [] } as TableDump;
  for (const table of TABLES) {
    const rows: Row[] = [];
    if (threadIds === undefined) {
      rows.push(...(await raw.query(`select * from ${table}`)));
    } else {
      for (const part of chunks(threadIds, 200)) {
        rows.push(...(await raw.query(`select * from ${table} where thread_id in ${placeholders(part)}`, part)));
      }
    }
    dump[table] = sortRows(rows.map((row) => plainRow(row, omit)));
  }
  return dump;
}

export interface Integrity {
  /**
   * Blob rows no checkpoint of their thread and namespace references in channel_versions,
   * nor an incremental value they reference extends (its delta_chain).
   */
  orphanBlobs: string[];
  /** Write rows whose checkpoint does not exist. */
  orphanWrites: string[];
  /** Versions a checkpoint references, or a referenced incremental value extends, without a blob row. */
  missingBlobs: string[];
  /** Checkpoints whose parent does not exist in their thread and namespace. */
  danglingParents: string[];
}

function parseVersions(value: unknown): Record<string, unknown> {
  return (typeof value === "string" ? JSON.parse(value) : value) as Record<string, unknown>;
}

/**
 * Reads the three tables directly (all threads, or the given ones) and lists what
 * does not fit together. Namespaces are compared on checkpoint_ns (MySQL keys on
 * ns_hash but stores the text too).
 */
export async function integrity(raw: RawDatabase, threadIds?: readonly string[]): Promise<Integrity> {
  const read = async (text: string) => {
    if (threadIds === undefined) return raw.query(text);
    const rows: Row[] = [];
    for (const part of chunks(threadIds, 200)) {
      rows.push(...(await raw.query(`${text} where thread_id in ${placeholders(part)}`, part)));
    }
    return rows;
  };
  const checkpoints = await read(
    "select thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, channel_versions from checkpoints",
  );
  const blobs = await read("select thread_id, checkpoint_ns, channel, version, delta_chain from checkpoint_blobs");
  const writes = await read(
    "select thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel from checkpoint_writes",
  );
  const key = (...parts: unknown[]) => JSON.stringify(parts.map((part) => String(part)));
  const ids = new Set(checkpoints.map((c) => key(c.thread_id, c.checkpoint_ns, c.checkpoint_id)));
  const referenced = new Set<string>();
  for (const c of checkpoints) {
    for (const [channel, version] of Object.entries(parseVersions(c.channel_versions))) {
      referenced.add(key(c.thread_id, c.checkpoint_ns, channel, version));
    }
  }
  const stored = new Set(blobs.map((b) => key(b.thread_id, b.checkpoint_ns, b.channel, b.version)));
  // A chain lists every version its value is reassembled from.
  for (const b of blobs) {
    if (b.delta_chain === null || !referenced.has(key(b.thread_id, b.checkpoint_ns, b.channel, b.version))) continue;
    const text =
      typeof b.delta_chain === "string" ? b.delta_chain : Buffer.from(b.delta_chain as Uint8Array).toString();
    const chain = JSON.parse(text) as { bases: string[] };
    for (const version of chain.bases) referenced.add(key(b.thread_id, b.checkpoint_ns, b.channel, version));
  }
  return {
    orphanBlobs: [...stored].filter((blob) => !referenced.has(blob)).sort(),
    orphanWrites: writes
      .filter((w) => !ids.has(key(w.thread_id, w.checkpoint_ns, w.checkpoint_id)))
      .map((w) => key(w.thread_id, w.checkpoint_ns, w.checkpoint_id, w.task_id, w.idx, w.channel))
      .sort(),
    missingBlobs: [...referenced].filter((blob) => !stored.has(blob)).sort(),
    danglingParents: checkpoints
      .filter(
        (c) => c.parent_checkpoint_id !== null && !ids.has(key(c.thread_id, c.checkpoint_ns, c.parent_checkpoint_id)),
      )
      .map((c) => key(c.thread_id, c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id))
      .sort(),
  };
}

export const CLEAN: Integrity = { orphanBlobs: [], orphanWrites: [], missingBlobs: [], danglingParents: [] };

/** The thread ids that have at least one row in any of the three tables. */
export async function storedThreads(raw: RawDatabase): Promise<string[]> {
  const ids = new Set<string>();
  for (const table of TABLES) {
    for (const row of await raw.query(`select distinct thread_id from ${table}`)) ids.add(String(row.thread_id));
  }
  return [...ids].sort();
}

export interface StoredCheckpoint {
  ns: string;
  id: string;
  parent: string | null;
}

/** The checkpoints of one thread as stored: namespace, id, parent; sorted by namespace, then id. */
export async function storedCheckpoints(raw: RawDatabase, threadId: string): Promise<StoredCheckpoint[]> {
  const rows = await raw.query(
    "select checkpoint_ns, checkpoint_id, parent_checkpoint_id from checkpoints where thread_id = ?",
    [threadId],
  );
  return rows
    .map((row) => ({
      ns: String(row.checkpoint_ns),
      id: String(row.checkpoint_id),
      parent: row.parent_checkpoint_id === null ? null : String(row.parent_checkpoint_id),
    }))
    .sort((a, b) => (a.ns === b.ns ? (a.id < b.id ? -1 : 1) : a.ns < b.ns ? -1 : 1));
}

/** Row counts of one thread in each table. */
export async function rowCounts(raw: RawDatabase, threadId: string): Promise<Record<TableName, number>> {
  const counts = { checkpoints: 0, checkpoint_blobs: 0, checkpoint_writes: 0 } as Record<TableName, number>;
  for (const table of TABLES) {
    const [row] = await raw.query(`select count(*) as n from ${table} where thread_id = ?`, [threadId]);
    counts[table] = Number(row.n);
  }
  return counts;
}

// ---------------------------------------------------------------------------
// Bulk copies of template threads (fast set-up of thousands of threads).
// ---------------------------------------------------------------------------

/** The tables a thread's rows live in, its per-thread row last. */
function schemaTables(dialect: DialectName): Record<TableName | "checkpoint_threads", Table> {
  const tables =
    dialect === "postgres"
      ? pgSchema.checkpointTables()
      : dialect === "mysql"
        ? mysqlSchema.checkpointTables()
        : sqliteSchema.checkpointTables();
  return {
    checkpoints: tables.checkpoints,
    checkpoint_blobs: tables.checkpointBlobs,
    checkpoint_writes: tables.checkpointWrites,
    checkpoint_threads: tables.checkpointThreads,
  };
}

/**
 * Copies every row of `templateThreadId`, its per-thread row included, to each of
 * `threadIds` with plain `insert ... select` statements (the columns come from the
 * schema definitions, generated ones left out), so thousands of threads take a few
 * statements.
 */
export async function cloneThread(raw: RawDatabase, templateThreadId: string, threadIds: readonly string[]) {
  for (const [table, definition] of Object.entries(schemaTables(raw.dialect))) {
    const names = Object.values(getTableColumns(definition) as Record<string, Column>)
      .filter((column) => !column.generated)
      .map((column) => column.name);
    const selected = names.map((name) => (name === "thread_id" ? "ids.id" : `t.${raw.id(name)}`)).join(", ");
    const one = raw.dialect === "postgres" ? "select cast(? as text) as id" : "select ? as id";
    for (const part of chunks(threadIds, 200)) {
      await raw.query(
        `insert into ${table} (${names.map((name) => raw.id(name)).join(", ")})
         select ${selected} from ${table} t cross join (${part.map(() => one).join(" union all ")}) ids
         where t.thread_id = ?`,
        [...part, templateThreadId],
      );
    }
  }
}

// ---------------------------------------------------------------------------
// A drizzle instance of our own (with a logger), for savers built with `new DrizzleSaver(db)`.
// ---------------------------------------------------------------------------

export interface OwnDrizzle {
  db: SupportedDatabase;
  close(): Promise<void>;
}

export function openDrizzle(dialect: DialectName, url: string, logger?: Logger): OwnDrizzle {
  if (dialect === "postgres") {
    const client = postgres(url, { max: 4, onnotice: () => {} });
    return { db: drizzlePg(client, { logger }), close: () => client.end() };
  }
  if (dialect === "mysql") {
    const pool = mysql.createPool({
      uri: url,
      charset: "utf8mb4",
      supportBigNumbers: true,
      connectionLimit: 4,
      ...mysqlIdsAsText,
    });
    return { db: drizzleMysql(pool, { logger }), close: () => pool.end() };
  }
  const sqlite = new Database(url);
  sqlite.pragma("busy_timeout = 10000");
  return {
    db: drizzleSqlite(sqlite, { logger }),
    close: async () => {
      sqlite.close();
    },
  };
}

/** Counts the statements a drizzle instance sends while `counting` is on. */
export class QueryCounter implements Logger {
  count = 0;
  counting = false;
  readonly statements: string[] = [];
  readonly params: unknown[][] = [];
  logQuery(query: string, params: unknown[]): void {
    if (!this.counting) return;
    this.count += 1;
    this.statements.push(query);
    this.params.push(params);
  }
  start(): void {
    this.count = 0;
    this.statements.length = 0;
    this.params.length = 0;
    this.counting = true;
  }
  stop(): number {
    this.counting = false;
    return this.count;
  }
}

// ---------------------------------------------------------------------------
// Hand-made histories through put/putWrites.
// ---------------------------------------------------------------------------

/** A channel value that gets a new version but no stored value (an "empty" blob), as LangGraph writes. */
export const EMPTY = Symbol("empty channel");

export interface CheckpointSpec {
  ns?: string;
  /** Parent checkpoint id (same namespace); none for a root. */
  parent?: string;
  /** Channels updated by this checkpoint: each gets a new version. */
  values?: Record<string, unknown>;
  runId?: string;
  metadata?: Record<string, unknown>;
  /** Pending writes stored on this checkpoint, per task. */
  writes?: { taskId: string; taskPath?: string; writes: PendingWrite[] }[];
}

interface WrittenCheckpoint {
  ns: string;
  versions: Record<string, string>;
  values: Record<string, unknown>;
  step: number;
}

/**
 * Writes checkpoints the way LangGraph does: a child inherits its parent's channel
 * versions and values, updated channels get the saver's next version, and only
 * those are passed as new versions (so only they get blob rows).
 */
export class HistoryWriter {
  private readonly written = new Map<string, WrittenCheckpoint>();

  constructor(
    private readonly saver: DrizzleSaver,
    readonly threadId: string,
  ) {}

  config(id: string, ns = ""): RunnableConfig {
    return { configurable: { thread_id: this.threadId, checkpoint_ns: ns, checkpoint_id: id } };
  }

  async put(spec: CheckpointSpec = {}): Promise<string> {
    const ns = spec.ns ?? "";
    const parent = spec.parent === undefined ? undefined : this.written.get(`${ns}\u0000${spec.parent}`);
    if (spec.parent !== undefined && !parent) throw new Error(`no checkpoint ${spec.parent} in "${ns}"`);
    const versions: Record<string, string> = { ...(parent?.versions ?? {}) };
    const values: Record<string, unknown> = { ...(parent?.values ?? {}) };
    const newVersions: ChannelVersions = {};
    for (const [channel, value] of Object.entries(spec.values ?? {})) {
      const next = String(this.saver.getNextVersion(versions[channel] as unknown as number));
      versions[channel] = next;
      newVersions[channel] = next;
      if (value === EMPTY) delete values[channel];
      else values[channel] = value;
    }
    const id = uuid6(-1);
    const checkpoint: Checkpoint = {
      ...emptyCheckpoint(),
      id,
      ts: new Date().toISOString(),
      channel_values: values,
      channel_versions: versions,
    };
    const step = parent ? parent.step + 1 : -1;
    const metadata = {
      source: parent ? "loop" : "input",
      step,
      parents: {},
      ...(spec.runId === undefined ? {} : { run_id: spec.runId }),
      ...(spec.metadata ?? {}),
    } as CheckpointMetadata;
    const parentConfig: RunnableConfig = {
      configurable: { thread_id: this.threadId, checkpoint_ns: ns, checkpoint_id: spec.parent },
    };
    await this.saver.put(parentConfig, checkpoint, metadata, newVersions);
    this.written.set(`${ns}\u0000${id}`, { ns, versions, values, step });
    for (const task of spec.writes ?? []) {
      await this.saver.putWrites(this.config(id, ns), task.writes, task.taskId, task.taskPath ?? "");
    }
    return id;
  }

  /** A linear chain of `count` checkpoints after `parent` (or from a root), each with one write. */
  async chain(count: number, options: { ns?: string; parent?: string; runId?: string; label?: string } = {}) {
    const ids: string[] = [];
    let parent = options.parent;
    for (let i = 0; i < count; i += 1) {
      const label = `${options.label ?? "c"}${i}`;
      parent = await this.put({
        ns: options.ns,
        parent,
        runId: options.runId,
        values: { step: label, [`only:${label}`]: { label } },
        writes: [{ taskId: `task-${label}`, writes: [["step", `after ${label}`]] }],
      });
      ids.push(parent);
    }
    return ids;
  }
}

// ---------------------------------------------------------------------------
// What the saver returns for a thread, comparable across threads.
// ---------------------------------------------------------------------------

export interface TupleView {
  ns: string;
  id: string;
  parent: string | null;
  checkpoint: Checkpoint;
  metadata: CheckpointMetadata | undefined;
  pendingWrites: CheckpointTuple["pendingWrites"];
}

function view(tuple: CheckpointTuple): TupleView {
  return {
    ns: String(tuple.config.configurable?.checkpoint_ns ?? ""),
    id: String(tuple.config.configurable?.checkpoint_id),
    parent: (tuple.parentConfig?.configurable?.checkpoint_id as string | undefined) ?? null,
    checkpoint: tuple.checkpoint,
    metadata: tuple.metadata,
    pendingWrites: tuple.pendingWrites ?? [],
  };
}

/** Every checkpoint of a thread in every namespace, as `list` and `getTuple` return them, without the thread id. */
export async function threadView(saver: DrizzleSaver, threadId: string): Promise<TupleView[]> {
  const listed: TupleView[] = [];
  for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) listed.push(view(tuple));
  const fetched: TupleView[] = [];
  for (const tuple of listed) {
    const one = await saver.getTuple({
      configurable: { thread_id: threadId, checkpoint_ns: tuple.ns, checkpoint_id: tuple.id },
    });
    if (!one) throw new Error(`getTuple found no ${tuple.ns}/${tuple.id} that list returned`);
    fetched.push(view(one));
  }
  // getTuple and list must agree; return one of them, in a stable order.
  expect(fetched).toEqual(listed);
  return listed.sort((a, b) => (a.ns === b.ns ? (a.id < b.id ? -1 : 1) : a.ns < b.ns ? -1 : 1));
}

/** The newest checkpoint id of each namespace. */
export function newestPerNamespace(checkpoints: readonly { ns: string; id: string }[]): Map<string, string> {
  const newest = new Map<string, string>();
  for (const { ns, id } of checkpoints) if ((newest.get(ns) ?? "") < id) newest.set(ns, id);
  return newest;
}

/** SHA-256 as MySQL's ns_hash column holds it, to check copied rows keep consistent keys. */
export function sha256Hex(text: string): string {
  return `bytes:${createHash("sha256").update(text, "utf8").digest("hex")}`;
}

// ---------------------------------------------------------------------------
// Long histories written straight into the tables (as the saver would store them).
// ---------------------------------------------------------------------------

function sha256(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

/** A multi-row insert with `?` placeholders, in statements of at most 30,000 parameters. */
async function insertRows(raw: RawDatabase, table: TableName, row: Row, rows: Row[]): Promise<void> {
  const columns = Object.keys(row);
  const one = `(${columns
    .map((column) => (raw.dialect === "postgres" && JSON_COLUMNS.has(column) ? "cast(cast(? as text) as jsonb)" : "?"))
    .join(", ")})`;
  const names = columns.map((column) => raw.id(column)).join(", ");
  for (const part of chunks(rows, Math.max(1, Math.floor(30_000 / columns.length)))) {
    await raw.query(
      `insert into ${table} (${names}) values ${part.map(() => one).join(", ")}`,
      part.flatMap((r) => columns.map((column) => r[column])),
    );
  }
}

export interface ChainStep {
  /** Channels updated by this checkpoint (EMPTY: a new version without a value). */
  values?: Record<string, unknown>;
  /** Pending writes of one task on this checkpoint. */
  writes?: PendingWrite[];
  runId?: string;
}

/**
 * Writes a linear chain of `count` checkpoints of one thread straight into the
 * tables, with the rows `put`/`putWrites` would store (serialized with the saver's
 * serializer, channel versions inherited, blobs for new versions only), in a few
 * multi-row statements. Returns the checkpoint ids, oldest first.
 */
export async function insertChain(
  raw: RawDatabase,
  saver: DrizzleSaver,
  threadId: string,
  count: number,
  stepOf: (i: number) => ChainStep,
  ns = "",
): Promise<string[]> {
  const mysqlKeys = raw.dialect === "mysql";
  const checkpoints: Row[] = [];
  const blobs: Row[] = [];
  const writes: Row[] = [];
  const versions: Record<string, string> = {};
  const ids: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const id = uuid6(-1);
    const step = stepOf(i);
    for (const [channel, value] of Object.entries(step.values ?? {})) {
      const version = `${String(i + 1).padStart(32, "0")}.${String(i % 1000).padStart(16, "0")}`;
      versions[channel] = version;
      const [type, bytes] = value === EMPTY ? ["empty", null] : await saver.serde.dumpsTyped(value);
      blobs.push({
        thread_id: threadId,
        checkpoint_ns: ns,
        ...(mysqlKeys ? { ns_hash: sha256(ns) } : {}),
        channel,
        version,
        type,
        blob: bytes === null ? null : Buffer.from(bytes),
      });
    }
    const checkpoint = { v: 4, id, ts: new Date().toISOString(), channel_versions: { ...versions }, versions_seen: {} };
    const [type, bytes] = await saver.serde.dumpsTyped(checkpoint);
    const metadata: Record<string, unknown> = { parents: {}, source: i === 0 ? "input" : "loop", step: i - 1 };
    if (step.runId !== undefined) metadata.run_id = step.runId;
    checkpoints.push({
      thread_id: threadId,
      checkpoint_ns: ns,
      ...(mysqlKeys ? { ns_hash: sha256(ns) } : {}),
      checkpoint_id: id,
      parent_checkpoint_id: ids.at(-1) ?? null,
      checkpoint_type: type,
      checkpoint: Buffer.from(bytes),
      channel_versions: JSON.stringify(versions),
      metadata: JSON.stringify(metadata, Object.keys(metadata).sort()),
    });
    for (const [idx, [channel, value]] of (step.writes ?? []).entries()) {
      const [writeType, writeBytes] = await saver.serde.dumpsTyped(value);
      const taskId = `task-${i}`;
      writes.push({
        thread_id: threadId,
        checkpoint_ns: ns,
        ...(mysqlKeys ? { ns_hash: sha256(ns) } : {}),
        checkpoint_id: id,
        task_id: taskId,
        ...(mysqlKeys ? { task_hash: sha256(taskId) } : {}),
        idx,
        channel,
        type: writeType,
        blob: Buffer.from(writeBytes),
        task_path: "",
      });
    }
    ids.push(id);
  }
  if (blobs.length > 0) await insertRows(raw, "checkpoint_blobs", blobs[0], blobs);
  await insertRows(raw, "checkpoints", checkpoints[0], checkpoints);
  if (writes.length > 0) await insertRows(raw, "checkpoint_writes", writes[0], writes);
  // The per-thread row, as the saver keeps it for every thread it writes.
  await (saver as unknown as { dialect: Dialect }).dialect.refreshThread(threadId);
  return ids;
}

/** The run id in a checkpoint's metadata (LangGraph's metadata type does not declare it). */
export function runIdOf(metadata: CheckpointMetadata | undefined): unknown {
  return (metadata as Record<string, unknown> | undefined)?.run_id;
}

/** A config naming a thread (and a namespace when given), as the tests pass to getTuple and list. */
export function threadConfig(threadId: string, ns?: string): RunnableConfig {
  return { configurable: { thread_id: threadId, ...(ns === undefined ? {} : { checkpoint_ns: ns }) } };
}

/** A second DrizzleSaver on the same database, as another process would have, for the enclosing describe block. */
export function useSecondSaver(db: { readonly url: string }): { readonly saver: DrizzleSaver } {
  let second: DrizzleSaver | undefined;
  beforeAll(async () => {
    second = await DrizzleSaver.fromUrl(db.url);
  });
  afterAll(async () => {
    await second?.close();
  });
  return {
    get saver() {
      if (!second) throw new Error("second saver not ready");
      return second;
    },
  };
}
