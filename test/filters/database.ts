import { createHash } from "node:crypto";
import Database from "better-sqlite3";
import type { Logger } from "drizzle-orm";
import { drizzle as drizzleSqlite } from "drizzle-orm/better-sqlite3";
import { drizzle as drizzleMysql } from "drizzle-orm/mysql2";
import { drizzle as drizzlePg } from "drizzle-orm/postgres-js";
import mysql from "mysql2/promise";
import postgres from "postgres";
import { DrizzleSaver, MsgpackSerializer } from "../../src/index.js";
import type { DialectName } from "../helpers/databases.js";
import { emptyCheckpoint } from "./reference.js";

/**
 * Direct access to a test database next to a saver over the same connection:
 * bulk inserts with the migrations' column layout (rows another writer could have
 * stored, or many rows fast), ANALYZE, plain queries for EXPLAIN, and the SQL the
 * saver runs, captured through drizzle's logger (so plans are read for the saver's
 * real statements).
 */

export interface RawCheckpointRow {
  threadId: string;
  checkpointId: string;
  /** Metadata as stored JSON text, written as is. */
  metadataJson: string;
  /**
   * Also store one channel value (channel "messages", versioned by the checkpoint
   * id, in checkpoint_blobs) and one pending write (checkpoint_writes), as the saver
   * would. Without it the checkpoint has no channels and no writes.
   */
  withValues?: boolean;
}

export interface LoggedStatement {
  sql: string;
  params: unknown[];
}

export type Row = Record<string, unknown>;

export interface TestDatabase {
  dialect: DialectName;
  /** A saver over this connection whose statements are recorded in `statements` while `capture` is on. */
  saver: DrizzleSaver;
  statements: LoggedStatement[];
  capture: boolean;
  insertCheckpoints(rows: readonly RawCheckpointRow[]): Promise<void>;
  analyze(): Promise<void>;
  query(text: string, params?: readonly unknown[]): Promise<Row[]>;
  close(): Promise<void>;
}

const CHANNEL = "messages";
const TASK_ID = "task-1";

/** The rows of checkpoints, checkpoint_blobs and checkpoint_writes for one RawCheckpointRow. */
interface Expanded {
  checkpoint: {
    threadId: string;
    checkpointId: string;
    type: string;
    bytes: Buffer;
    channelVersions: string;
    metadata: string;
  };
  blob?: { threadId: string; channel: string; version: string; type: string; bytes: Buffer };
  write?: {
    threadId: string;
    checkpointId: string;
    taskId: string;
    idx: number;
    channel: string;
    type: string;
    bytes: Buffer;
  };
}

/** Serializes like the saver: the checkpoint without its values (msgpack), values and writes apart. */
async function expand(rows: readonly RawCheckpointRow[]): Promise<Expanded[]> {
  const serde = new MsgpackSerializer();
  const [valueType, valueBytes] = await serde.dumpsTyped([{ role: "user", content: "hello" }]);
  const value = { type: valueType, bytes: Buffer.from(valueBytes) };
  const { channel_values: _none, ...empty } = emptyCheckpoint("00000000-0000-6000-8000-000000000000");
  const [emptyType, emptyBytes] = await serde.dumpsTyped(empty);
  const emptyCheckpointRow = { type: emptyType, bytes: Buffer.from(emptyBytes), channelVersions: "{}" };
  return Promise.all(
    rows.map(async (row): Promise<Expanded> => {
      const base = { threadId: row.threadId, checkpointId: row.checkpointId, metadata: row.metadataJson };
      if (!row.withValues) return { checkpoint: { ...base, ...emptyCheckpointRow } };
      const version = row.checkpointId;
      const { channel_values: _values, ...checkpoint } = emptyCheckpoint(row.checkpointId);
      checkpoint.channel_versions = { [CHANNEL]: version };
      const [type, bytes] = await serde.dumpsTyped(checkpoint);
      return {
        checkpoint: {
          ...base,
          type,
          bytes: Buffer.from(bytes),
          channelVersions: JSON.stringify({ [CHANNEL]: version }),
        },
        blob: { threadId: row.threadId, channel: CHANNEL, version, ...value },
        write: {
          threadId: row.threadId,
          checkpointId: row.checkpointId,
          taskId: TASK_ID,
          idx: 0,
          channel: CHANNEL,
          ...value,
        },
      };
    }),
  );
}

function chunks<T>(items: readonly T[], size: number): T[][] {
  const result: T[][] = [];
  for (let i = 0; i < items.length; i += size) result.push(items.slice(i, i + size));
  return result;
}

function defined<T>(items: (T | undefined)[]): T[] {
  return items.filter((item): item is T => item !== undefined);
}

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest();

export async function openTestDatabase(dialect: DialectName, url: string): Promise<TestDatabase> {
  const statements: LoggedStatement[] = [];
  const handle = { capture: false };
  const logger: Logger = {
    logQuery(query, params) {
      if (handle.capture) statements.push({ sql: query, params });
    },
  };

  if (dialect === "postgres") {
    const client = postgres(url, { onnotice: () => {}, max: 4 });
    const saver = new DrizzleSaver(drizzlePg(client, { logger }));
    const insertFromJson = async (sql: string, records: object[]) => {
      if (records.length > 0) await client.unsafe(sql, [JSON.stringify(records)]);
    };
    return Object.assign(handle, {
      dialect,
      saver,
      statements,
      async insertCheckpoints(rows: readonly RawCheckpointRow[]) {
        for (const part of chunks(await expand(rows), 10_000)) {
          const hex = (bytes: Buffer) => bytes.toString("hex");
          await insertFromJson(
            `insert into checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint_type, checkpoint, channel_versions, metadata)
             select t, '', c, null, ty, decode(b, 'hex'), v::jsonb, m::jsonb
             from json_to_recordset($1::json) as u(t text, c text, ty text, b text, v text, m text)`,
            part.map(({ checkpoint: r }) => ({
              t: r.threadId,
              c: r.checkpointId,
              ty: r.type,
              b: hex(r.bytes),
              v: r.channelVersions,
              m: r.metadata,
            })),
          );
          await insertFromJson(
            `insert into checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob)
             select t, '', ch, ve, ty, decode(b, 'hex') from json_to_recordset($1::json) as u(t text, ch text, ve text, ty text, b text)`,
            defined(part.map((e) => e.blob)).map((r) => ({
              t: r.threadId,
              ch: r.channel,
              ve: r.version,
              ty: r.type,
              b: hex(r.bytes),
            })),
          );
          await insertFromJson(
            `insert into checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob, task_path)
             select t, '', c, ta, i, ch, ty, decode(b, 'hex'), ''
             from json_to_recordset($1::json) as u(t text, c text, ta text, i int, ch text, ty text, b text)`,
            defined(part.map((e) => e.write)).map((r) => ({
              t: r.threadId,
              c: r.checkpointId,
              ta: r.taskId,
              i: r.idx,
              ch: r.channel,
              ty: r.type,
              b: hex(r.bytes),
            })),
          );
        }
      },
      async analyze() {
        await client.unsafe("analyze");
      },
      async query(text: string, params: readonly unknown[] = []) {
        return (await client.unsafe(text, params as postgres.ParameterOrJSON<never>[])) as unknown as Row[];
      },
      async close() {
        await client.end();
      },
    });
  }

  if (dialect === "mysql") {
    const pool = mysql.createPool({ uri: url, charset: "utf8mb4", supportBigNumbers: true, connectionLimit: 4 });
    const saver = new DrizzleSaver(drizzleMysql(pool, { logger }));
    const emptyNsHash = sha256("");
    const query = async (text: string, params: readonly unknown[] = []) => {
      const [rows] = await pool.query(text, params as unknown[]);
      return rows as Row[];
    };
    const insertValues = async (sql: string, values: unknown[][]) => {
      if (values.length > 0) await pool.query(sql, [values]);
    };
    return Object.assign(handle, {
      dialect,
      saver,
      statements,
      async insertCheckpoints(rows: readonly RawCheckpointRow[]) {
        for (const part of chunks(await expand(rows), 2_000)) {
          await insertValues(
            "insert into checkpoints (thread_id, checkpoint_ns, ns_hash, checkpoint_id, parent_checkpoint_id, checkpoint_type, checkpoint, channel_versions, metadata) values ?",
            part.map(({ checkpoint: r }) => [
              r.threadId,
              "",
              emptyNsHash,
              r.checkpointId,
              null,
              r.type,
              r.bytes,
              r.channelVersions,
              r.metadata,
            ]),
          );
          await insertValues(
            "insert into checkpoint_blobs (thread_id, checkpoint_ns, ns_hash, channel, version, type, `blob`) values ?",
            defined(part.map((e) => e.blob)).map((r) => [
              r.threadId,
              "",
              emptyNsHash,
              r.channel,
              r.version,
              r.type,
              r.bytes,
            ]),
          );
          await insertValues(
            "insert into checkpoint_writes (thread_id, checkpoint_ns, ns_hash, checkpoint_id, task_id, task_hash, idx, channel, type, `blob`, task_path) values ?",
            defined(part.map((e) => e.write)).map((r) => [
              ...[r.threadId, "", emptyNsHash, r.checkpointId, r.taskId, sha256(r.taskId)],
              ...[r.idx, r.channel, r.type, r.bytes, ""],
            ]),
          );
        }
      },
      async analyze() {
        await query("analyze table checkpoints, checkpoint_blobs, checkpoint_writes, checkpoint_threads");
      },
      query,
      async close() {
        await pool.end();
      },
    });
  }

  const sqlite = new Database(url);
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("busy_timeout = 10000");
  const saver = new DrizzleSaver(drizzleSqlite(sqlite, { logger }));
  return Object.assign(handle, {
    dialect,
    saver,
    statements,
    async insertCheckpoints(rows: readonly RawCheckpointRow[]) {
      const expanded = await expand(rows);
      const checkpoint = sqlite.prepare(
        "insert into checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint_type, checkpoint, channel_versions, metadata) values (?, '', ?, null, ?, ?, ?, ?)",
      );
      const blob = sqlite.prepare(
        "insert into checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob) values (?, '', ?, ?, ?, ?)",
      );
      const write = sqlite.prepare(
        "insert into checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob, task_path) values (?, '', ?, ?, ?, ?, ?, ?, '')",
      );
      sqlite.transaction(() => {
        for (const e of expanded) {
          const r = e.checkpoint;
          checkpoint.run(r.threadId, r.checkpointId, r.type, r.bytes, r.channelVersions, r.metadata);
          if (e.blob) blob.run(e.blob.threadId, e.blob.channel, e.blob.version, e.blob.type, e.blob.bytes);
          if (e.write) {
            const w = e.write;
            write.run(w.threadId, w.checkpointId, w.taskId, w.idx, w.channel, w.type, w.bytes);
          }
        }
      })();
    },
    async analyze() {
      sqlite.exec("analyze");
    },
    async query(text: string, params: readonly unknown[] = []) {
      const statement = sqlite.prepare(text);
      // Statements without rows (a bulk INSERT ... SELECT) run and return none.
      if (!statement.reader) {
        statement.run(...params);
        return [];
      }
      return statement.all(...params) as Row[];
    },
    async close() {
      sqlite.close();
    },
  });
}
