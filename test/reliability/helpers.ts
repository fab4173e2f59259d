import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Checkpoint } from "@langchain/langgraph-checkpoint";
import mysql from "mysql2/promise";
import postgres from "postgres";
import { expect } from "vitest";
import type { DrizzleSaver } from "../../src/index.js";
import type { DialectName } from "../helpers/databases.js";
import { openRaw as openRawDatabase, type RawRow } from "../helpers/raw.js";

/**
 * Shared pieces of the reliability suite: deterministic values, raw SQL access to
 * the saver's tables (to count rows, craft hostile rows and drop connections), child
 * processes that speak JSON lines, and the figures each scenario reports.
 */

/** RELIABILITY_SOAK=1 runs the long variants (more processes, more operations). */
export const SOAK = process.env.RELIABILITY_SOAK === "1";

// ---------------------------------------------------------------------------
// Figures: every scenario prints one line; RELIABILITY_REPORT=<file> also collects them.
// ---------------------------------------------------------------------------

export function report(scenario: string, dialect: DialectName | "all", figures: Record<string, unknown>): void {
  const line = JSON.stringify({ scenario, dialect, soak: SOAK, ...figures });
  console.log(`[reliability] ${line}`);
  const file = process.env.RELIABILITY_REPORT;
  if (file) appendFileSync(file, `${line}\n`);
}

// ---------------------------------------------------------------------------
// Deterministic values, so a verifier can recompute what a writer stored.
// ---------------------------------------------------------------------------

/** A string of exactly `size` characters determined by `seed` (at least the seed itself). */
export function payload(seed: string, size: number): string {
  if (size <= seed.length) return seed;
  const unit = createHash("sha256").update(seed).digest("hex");
  const body = unit.repeat(Math.ceil((size - seed.length - 1) / unit.length)).slice(0, size - seed.length - 1);
  return `${seed}:${body}`;
}

export interface ChannelValue {
  seed: string;
  text: string;
}

export function channelValue(seed: string, size: number): ChannelValue {
  return { seed, text: payload(seed, size) };
}

export function checkpointOf(
  id: string,
  values: Record<string, unknown>,
  versions: Checkpoint["channel_versions"],
  extra: Partial<Checkpoint> = {},
): Checkpoint {
  return {
    v: 4,
    id,
    ts: new Date().toISOString(),
    channel_values: values,
    channel_versions: versions,
    versions_seen: {},
    ...extra,
  };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Fails when `promise` has not settled after `ms`: a liveness check for calls that must not hang
 * (closing a saver after its connections dropped), with a bound far above any normal duration.
 */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not return within ${ms / 1000} s`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Counts the saver's writes in flight. LangGraph can reject an invoke while a put or putWrites of
 * the failed run is still running (it lands afterwards); a test that reads "the last checkpoint"
 * to predict where a resumed run starts waits for them first.
 */
export function trackWrites(saver: DrizzleSaver): { idle(): Promise<void> } {
  const pending = new Set<Promise<unknown>>();
  const track = <T>(promise: Promise<T>): Promise<T> => {
    pending.add(promise);
    promise.then(
      () => pending.delete(promise),
      () => pending.delete(promise),
    );
    return promise;
  };
  const put = saver.put.bind(saver);
  const putWrites = saver.putWrites.bind(saver);
  saver.put = (...args: Parameters<DrizzleSaver["put"]>) => track(put(...args));
  saver.putWrites = (...args: Parameters<DrizzleSaver["putWrites"]>) => track(putWrites(...args));
  return {
    async idle() {
      while (pending.size > 0) await Promise.allSettled([...pending]);
    },
  };
}

export function sha256(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

// ---------------------------------------------------------------------------
// Raw SQL on the saver's database (never through the saver).
// ---------------------------------------------------------------------------

export interface RowCounts {
  checkpoints: number;
  blobs: number;
  writes: number;
}

export interface RawDb {
  dialect: DialectName;
  /** Runs SQL with `?` placeholders (rewritten to $n on PostgreSQL). */
  query(text: string, params?: unknown[]): Promise<RawRow[]>;
  counts(): Promise<RowCounts>;
  /** Inserts a blob row as an attacker with table access would. */
  insertBlob(row: {
    threadId: string;
    ns?: string;
    channel: string;
    version: string;
    type: string;
    blob: Uint8Array;
  }): Promise<void>;
  insertWrite(row: {
    threadId: string;
    ns?: string;
    checkpointId: string;
    taskId: string;
    idx: number;
    channel: string;
    type: string;
    blob: Uint8Array;
  }): Promise<void>;
  /** Overwrites columns of a checkpoint row the saver wrote. */
  updateCheckpoint(
    key: { threadId: string; checkpointId: string },
    set: { type?: string; checkpoint?: Uint8Array; metadata?: string },
  ): Promise<void>;
  close(): Promise<void>;
}

const hash = (text: string) => createHash("sha256").update(text, "utf8").digest();

export async function openRaw(dialect: DialectName, url: string): Promise<RawDb> {
  // Ids as the driver returns them: these tests write rows as an attacker with table access would.
  const raw = await openRawDatabase(dialect, url, { idsAsText: false });
  const query = (text: string, params: unknown[] = []) => raw.query(text, params);
  const close = () => raw.close();
  const q = (name: string) => (dialect === "mysql" ? `\`${name}\`` : `"${name}"`);
  const count = async (table: string) => Number((await query(`select count(*) as n from ${table}`))[0].n);
  const buffer = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return {
    dialect,
    query,
    async counts() {
      return {
        checkpoints: await count("checkpoints"),
        blobs: await count("checkpoint_blobs"),
        writes: await count("checkpoint_writes"),
      };
    },
    async insertBlob({ threadId, ns = "", channel, version, type, blob }) {
      const cols = ["thread_id", "checkpoint_ns", "channel", "version", "type", "blob"];
      const values: unknown[] = [threadId, ns, channel, version, type, buffer(blob)];
      if (dialect === "mysql") {
        cols.push("ns_hash");
        values.push(hash(ns));
      }
      await query(
        `insert into checkpoint_blobs (${cols.map(q).join(", ")}) values (${cols.map(() => "?").join(", ")})`,
        values,
      );
    },
    async insertWrite({ threadId, ns = "", checkpointId, taskId, idx, channel, type, blob }) {
      const cols = [
        "thread_id",
        "checkpoint_ns",
        "checkpoint_id",
        "task_id",
        "idx",
        "channel",
        "type",
        "blob",
        "task_path",
      ];
      const values: unknown[] = [threadId, ns, checkpointId, taskId, idx, channel, type, buffer(blob), ""];
      if (dialect === "mysql") {
        cols.push("ns_hash", "task_hash");
        values.push(hash(ns), hash(taskId));
      }
      await query(
        `insert into checkpoint_writes (${cols.map(q).join(", ")}) values (${cols.map(() => "?").join(", ")})`,
        values,
      );
    },
    async updateCheckpoint({ threadId, checkpointId }, set) {
      const assignments: string[] = [];
      const values: unknown[] = [];
      if (set.type !== undefined) {
        assignments.push(`${q("checkpoint_type")} = ?`);
        values.push(set.type);
      }
      if (set.checkpoint !== undefined) {
        assignments.push(`${q("checkpoint")} = ?`);
        values.push(buffer(set.checkpoint));
      }
      if (set.metadata !== undefined) {
        assignments.push(`${q("metadata")} = ${dialect === "postgres" ? "?::jsonb" : "?"}`);
        values.push(set.metadata);
      }
      await query(`update checkpoints set ${assignments.join(", ")} where thread_id = ? and checkpoint_id = ?`, [
        ...values,
        threadId,
        checkpointId,
      ]);
    },
    close,
  };
}

/** The database name in a server URL (freshDatabaseUrl gives each test file its own). */
function databaseName(url: string): string {
  return decodeURIComponent(new URL(url).pathname.slice(1));
}

function serverUrl(dialect: "postgres" | "mysql"): string {
  const url = process.env[dialect === "postgres" ? "PG_URL" : "MYSQL_URL"];
  if (!url) throw new Error(`${dialect === "postgres" ? "PG_URL" : "MYSQL_URL"} is not set`);
  return url;
}

/**
 * An administrative connection to the server's main database that drops the
 * connections to one database we created: pg_terminate_backend on PostgreSQL,
 * KILL on MariaDB. Only connections whose database is ours are touched.
 */
export interface ConnectionKiller {
  /** Drops every connection to the database now; returns how many were dropped. */
  killAll(): Promise<number>;
  /**
   * Waits until every session killAll killed has ended on the server: a session killed during its
   * commit may still finish that commit after its client saw the error, so the database is settled
   * (each cut transaction committed or rolled back) only then.
   */
  waitForKilledToEnd(): Promise<void>;
  close(): Promise<void>;
}

export async function connectionKiller(dialect: "postgres" | "mysql", url: string): Promise<ConnectionKiller> {
  const database = databaseName(url);
  if (!/^t_[0-9a-f]{12}$/.test(database)) {
    throw new Error(`refusing to drop connections of ${database}: not a database created by freshDatabaseUrl`);
  }
  let killAll: () => Promise<number>;
  let alive: (ids: number[]) => Promise<number>;
  let close: () => Promise<void>;
  const killed = new Set<number>();
  if (dialect === "postgres") {
    const admin = postgres(serverUrl("postgres"), { max: 1, onnotice: () => {} });
    killAll = async () => {
      const rows = await admin`select pid, pg_terminate_backend(pid) as killed from pg_stat_activity
        where datname = ${database} and pid <> pg_backend_pid()`;
      const done = rows.filter((row) => row.killed === true);
      for (const row of done) killed.add(Number(row.pid));
      return done.length;
    };
    alive = async (ids) => {
      const rows = await admin`select count(*)::int as n from pg_stat_activity where pid = any(${ids})`;
      return Number(rows[0].n);
    };
    close = () => admin.end();
  } else {
    const admin = await mysql.createConnection(serverUrl("mysql"));
    const ids = async () => {
      const [rows] = await admin.query(
        "select id from information_schema.processlist where db = ? and id <> connection_id()",
        [database],
      );
      return (rows as RawRow[]).map((row) => Number(row.id));
    };
    killAll = async () => {
      let count = 0;
      for (const id of await ids()) {
        try {
          await admin.query(`kill connection ${id}`);
          killed.add(id);
          count += 1;
        } catch (error) {
          // The connection may have ended on its own between the list and the kill.
          if ((error as { errno?: number }).errno !== 1094) throw error;
        }
      }
      return count;
    };
    alive = async (list) => {
      const [rows] = await admin.query("select count(*) as n from information_schema.processlist where id in (?)", [
        list,
      ]);
      return Number((rows as RawRow[])[0].n);
    };
    close = () => admin.end();
  }
  return {
    killAll,
    async waitForKilledToEnd() {
      const ids = [...killed];
      for (let i = 0; i < 600 && ids.length > 0; i++) {
        if ((await alive(ids)) === 0) return;
        await sleep(50);
      }
      if (ids.length > 0) throw new Error(`killed sessions of ${database} did not end`);
    },
    close,
  };
}

// ---------------------------------------------------------------------------
// Child processes that print one JSON object per line.
// ---------------------------------------------------------------------------

export type Message = Record<string, unknown> & { kind: string };

export interface Child {
  process: ChildProcess;
  /** Messages as they arrive on stdout; once the child has exited, exactly what its journal file holds. */
  messages: Message[];
  stderr(): string;
  /** Resolves with the first message for which `test` holds (rejects if the child exits first). */
  waitFor(test: (message: Message) => boolean, what: string): Promise<Message>;
  send(line: string): void;
  /** Resolves with the exit code (or the signal name) once the child has exited and its output is read. */
  exited: Promise<number | string>;
}

function parseLines(text: string): Message[] {
  // A killed child may leave a partial last line: it is not a message (the operation was not acknowledged).
  return text
    .split("\n")
    .filter((line) => line.startsWith("{") && line.endsWith("}"))
    .map((line) => JSON.parse(line) as Message);
}

export function startChild(script: string, args: unknown): Child {
  const journal = join(mkdtempSync(join(tmpdir(), "lgcd-rel-journal-")), "journal.jsonl");
  const child = spawn(process.execPath, ["--import", "tsx", script, JSON.stringify(args)], {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, RELIABILITY_JOURNAL: journal },
  });
  const messages: Message[] = [];
  const waiters: { test: (message: Message) => boolean; resolve: (m: Message) => void }[] = [];
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8");
  child.stderr.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    stdout += chunk;
    let newline = stdout.indexOf("\n");
    while (newline >= 0) {
      const line = stdout.slice(0, newline);
      stdout = stdout.slice(newline + 1);
      newline = stdout.indexOf("\n");
      if (!line.startsWith("{")) continue;
      const message = JSON.parse(line) as Message;
      messages.push(message);
      for (const waiter of [...waiters]) {
        if (waiter.test(message)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(message);
        }
      }
    }
  });
  child.stderr.on("data", (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<number | string>((resolve) =>
    child.on("close", (code, signal) => {
      let recorded: Message[] = [];
      try {
        recorded = parseLines(readFileSync(journal, "utf8"));
      } catch {
        // The child died before it wrote anything.
      }
      rmSync(dirname(journal), { recursive: true, force: true });
      messages.splice(0, messages.length, ...recorded);
      resolve(code ?? signal ?? "unknown");
    }),
  );
  child.stdin.on("error", () => {}); // writing "go" to a child that already died
  return {
    process: child,
    messages,
    stderr: () => stderr,
    waitFor(test, what) {
      const found = messages.find(test);
      if (found) return Promise.resolve(found);
      return new Promise<Message>((resolve, reject) => {
        waiters.push({ test, resolve });
        exited.then((code) => {
          // A worker reports its own failure as an error message (workers/io.ts), not on stderr.
          const errors = messages.filter((m) => m.kind === "error");
          reject(new Error(`child exited (${code}) before ${what}: ${JSON.stringify(errors)}\n${stderr.slice(-4000)}`));
        });
      });
    },
    send(line) {
      child.stdin.write(`${line}\n`);
    },
    exited,
  };
}

/** Fails with the child's stderr when it did not exit with code 0. */
export async function expectCleanExit(child: Child): Promise<void> {
  const code = await child.exited;
  if (code !== 0) {
    const errors = child.messages.filter((m) => m.kind === "error").map((m) => m.message);
    throw new Error(`child exited with ${code}: ${JSON.stringify(errors)}\n${child.stderr().slice(-4000)}`);
  }
}

/**
 * Runs a worker that starts background work and never stops it: the process must exit on
 * its own (timers unreferenced) within `ms`, after saying "started".
 */
export async function expectExitsOnItsOwn(script: string, args: unknown, ms = 15_000): Promise<void> {
  const child = startChild(script, args);
  const code = await Promise.race([child.exited, sleep(ms).then(() => "still running")]);
  if (code === "still running") child.process.kill();
  expect(code).toBe(0);
  expect(child.messages.map((m) => m.kind)).toContain("started");
}

export const WORKERS = "test/reliability/workers";

/** Errors a dropped connection may surface as; anything else is a saver error and fails the test. */
export const CONNECTION_ERROR =
  /terminat|connection|closed|ECONNRESET|EPIPE|socket|lost|killed|interrupted|shutdown|57P01|server has gone away|Can't add new command/i;

/** An error and its causes on one line, with driver codes. */
export function describeError(error: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = error; e instanceof Error && parts.length < 4; e = e.cause) {
    parts.push(`${e.name}: ${e.message.slice(0, 300)}${"code" in e ? ` [${String(e.code)}]` : ""}`);
  }
  return parts.length > 0 ? parts.join(" <- ") : String(error);
}
