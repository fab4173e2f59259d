import {
  type CheckpointPendingWrite,
  compareWritesSortKeys,
  type DeltaChannelHistory,
  type SerializerProtocol,
  writesSortKey,
} from "@langchain/langgraph-checkpoint";
import { type Column, getTableColumns, type SQL, sql, type Table } from "drizzle-orm";
import type { Dialect, Row } from "../dialects/dialect.js";
import { InvalidInputError } from "../errors.js";
import { fromStoredJson, storedFilterEntries } from "./metadata.js";
import { as, asBytes, parseJsonColumn, requireId } from "./values.js";

export type PruneStrategy = "keep_latest" | "delete";

export interface ExpireThreadsOptions {
  /** Threads whose newest checkpoint was created before this time are expired. */
  idleSince: Date;
  /** "delete" (default) removes the threads; "keep_latest" keeps each one's newest checkpoints. */
  strategy?: PruneStrategy;
  /** Threads handled per batch, each thread in its own short transaction; default 100. */
  batchSize?: number;
  /** Called after each batch with the number of threads handled so far. */
  onProgress?: (progress: { threads: number }) => void;
}

/** Threads examined by one expiry scan query (also keeps MySQL's recursion limit of 1000 away). */
const SCAN_THREADS = 500;
/** Ancestors walked by one query; below MariaDB's and MySQL's default recursion limit of 1000. */
const WALK_DEPTH = 900;
/** Ids per `in (...)` list, well below every driver's parameter limit. */
const CHUNK = 500;

interface StoredCheckpoint {
  ns: string;
  checkpointId: string;
  parentCheckpointId: string | null;
  versions: Record<string, unknown>;
  metadata: Record<string, unknown>;
  /** The newest of its namespace in the database's order, the one getTuple and list return first. */
  isLatest: boolean;
}

function chunks<T>(items: T[]): T[][] {
  const result: T[][] = [];
  for (let i = 0; i < items.length; i += CHUNK) result.push(items.slice(i, i + CHUNK));
  return result;
}

/**
 * Thread lifecycle on top of a dialect: copy, prune, delete by run, expire idle
 * threads, and the one-query delta-channel walk. Every change to a thread is one
 * atomic unit, so other threads' writers are never blocked for long.
 */
export class ThreadLifecycle {
  constructor(
    private readonly dialect: Dialect,
    private readonly serde: SerializerProtocol,
  ) {}

  async copyThread(sourceThreadId: string, targetThreadId: string): Promise<void> {
    requireId(sourceThreadId, "source thread id");
    requireId(targetThreadId, "target thread id");
    if (sourceThreadId === targetThreadId)
      throw new InvalidInputError("copyThread: source and target are the same thread");
    const tables = this.tables();
    for (const { table, threadId } of tables) {
      const rows = await this.dialect.query(
        sql`select 1 as found from ${table} where ${threadId} = ${targetThreadId} limit 1`,
      );
      if (rows.length > 0) {
        throw new InvalidInputError(`copyThread: target thread "${targetThreadId}" is not empty`);
      }
    }
    // insert ... select keeps blobs and writes as bytes, never decoding them.
    await this.dialect.atomically(
      tables.map(({ table, threadId }) => {
        const columns = Object.values(getTableColumns(table) as Record<string, Column>).filter(
          (column) => !column.generated,
        );
        const names = sql.join(
          columns.map((column) => sql.identifier(column.name)),
          sql`, `,
        );
        const values = sql.join(
          columns.map((column) => (column === threadId ? sql`${targetThreadId}` : sql`${column}`)),
          sql`, `,
        );
        return sql`insert into ${table} (${names}) select ${values} from ${table} where ${threadId} = ${sourceThreadId}`;
      }),
    );
  }

  async deleteThreads(threadIds: string[]): Promise<void> {
    for (const threadId of threadIds) {
      requireId(threadId, "thread_id");
      // Until settled: a late put holding its parent's lock is waited for, then its rows go too.
      await this.dialect.atomicallyUntilSettled(
        this.tables().map(({ table, threadId: column }) => sql`delete from ${table} where ${column} = ${threadId}`),
      );
    }
  }

  async prune(threadIds: string[], strategy: PruneStrategy): Promise<void> {
    if (!Array.isArray(threadIds)) throw new InvalidInputError("prune: threadIds must be an array");
    if (strategy === "delete") return this.deleteThreads(threadIds);
    if (strategy !== "keep_latest") throw new InvalidInputError(`prune: unknown strategy "${String(strategy)}"`);
    for (const threadId of threadIds) {
      requireId(threadId, "thread_id");
      await this.removeCheckpoints(threadId, (rows) => rows.filter((row) => !row.isLatest));
    }
  }

  async deleteForRuns(runIds: string[]): Promise<void> {
    if (!Array.isArray(runIds) || runIds.some((id) => typeof id !== "string")) {
      throw new InvalidInputError("deleteForRuns: runIds must be an array of strings");
    }
    if (runIds.length === 0) return;
    const c = this.dialect.columns.checkpoints;
    const runs = new Set(runIds);
    const threads = new Set<string>();
    for (const chunk of chunks(runIds)) {
      const matches = sql.join(
        chunk.map((runId) => this.dialect.metadataMatches(storedFilterEntries({ run_id: runId }))),
        sql` or `,
      );
      const rows = await this.dialect.query(
        sql`select distinct ${as(c.threadId, "thread_id")} from ${c.table} where ${matches}`,
      );
      for (const row of rows) threads.add(row.thread_id as string);
    }
    for (const threadId of threads) {
      await this.removeCheckpoints(threadId, (rows) =>
        rows.filter((row) => typeof row.metadata.run_id === "string" && runs.has(row.metadata.run_id)),
      );
    }
  }

  async expireThreads(options: ExpireThreadsOptions): Promise<number> {
    const { idleSince, strategy = "delete", batchSize = 100, onProgress } = options ?? {};
    if (!(idleSince instanceof Date) || Number.isNaN(idleSince.getTime())) {
      throw new InvalidInputError("expireThreads: idleSince must be a valid Date");
    }
    if (!Number.isInteger(batchSize) || batchSize < 1) {
      throw new InvalidInputError("expireThreads: batchSize must be a positive integer");
    }
    let touched = 0;
    let batch: string[] = [];
    const flush = async () => {
      await this.prune(batch, strategy);
      touched += batch.length;
      batch = [];
      onProgress?.({ threads: touched });
    };
    let cursor = "";
    for (;;) {
      const scanned = await this.scanThreads(cursor, idleSince);
      if (scanned.length === 0) break;
      cursor = scanned[scanned.length - 1].threadId;
      for (const { threadId, idle } of scanned) {
        if (!idle) continue;
        batch.push(threadId);
        if (batch.length >= batchSize) await flush();
      }
    }
    if (batch.length > 0) await flush();
    return touched;
  }

  /**
   * LangGraph's delta-channel walk in one query: a recursive CTE follows the parent
   * chain, and joins the writes of the requested channels and each channel's nearest
   * stored value (through the JSON copy of channel_versions).
   */
  async deltaChannelHistory(
    threadId: string,
    ns: string,
    checkpointId: string | undefined,
    channels: string[],
  ): Promise<Record<string, DeltaChannelHistory>> {
    const result: Record<string, DeltaChannelHistory> = {};
    for (const channel of channels) result[channel] = { writes: [] };
    const c = this.dialect.columns.checkpoints;
    const seedDepth = new Map<string, number>();
    const found: { row: Row; depth: number }[] = [];
    // The target itself is depth 0 and contributes nothing; its ancestors are 1, 2, ...
    let start: { from: SQL; depth: number } | undefined = {
      from:
        checkpointId === undefined
          ? sql`(select max(${c.checkpointId}) from ${c.table} where ${c.threadId} = ${threadId} and ${c.nsKey} = ${this.dialect.nsKey(ns)})`
          : sql`${checkpointId}`,
      depth: 0,
    };
    while (start) {
      const remaining = channels.filter((channel) => !seedDepth.has(channel));
      if (remaining.length === 0) break;
      const rows = await this.walkAncestors(threadId, ns, start, remaining);
      let deepest: Row | undefined;
      for (const row of rows) {
        const depth = start.depth + Number(row.depth);
        if (row.kind === "link") deepest = row;
        else if (row.kind === "seed") {
          seedDepth.set(row.channel as string, depth);
          result[row.channel as string].seed = await this.serde.loadsTyped(row.type as string, asBytes(row.blob));
        } else found.push({ row, depth });
      }
      // A walk stops after WALK_DEPTH steps (MariaDB's default recursion limit is 1000):
      // carry on from the deepest ancestor's parent.
      const parent = deepest?.parent_checkpoint_id;
      start =
        deepest && Number(deepest.depth) >= WALK_DEPTH && typeof parent === "string"
          ? { from: sql`${parent}`, depth: start.depth + Number(deepest.depth) + 1 }
          : undefined;
    }
    // Oldest ancestor first; within one checkpoint, LangGraph's (task path, task id, idx) order.
    const writes = found
      .filter(({ row, depth }) => depth <= (seedDepth.get(row.channel as string) ?? Infinity))
      .map(({ row, depth }) => ({
        row,
        depth,
        key: writesSortKey((row.task_path as string) ?? "", row.task_id as string, Number(row.idx)),
      }))
      .sort((x, y) => y.depth - x.depth || compareWritesSortKeys(x.key, y.key));
    for (const { row } of writes) {
      const value = await this.serde.loadsTyped(row.type as string, asBytes(row.blob));
      const write: CheckpointPendingWrite = [row.task_id as string, row.channel as string, value];
      result[row.channel as string].writes.push(write);
    }
    return result;
  }

  /**
   * One query: a recursive CTE follows the parent chain from `start` for at most
   * WALK_DEPTH steps and returns the writes of `channels` at each ancestor, each
   * channel's nearest stored value ("seed"), and the deepest ancestor reached ("link").
   * Depths are relative to `start`; with `start.depth` 0 the start itself is left out.
   */
  private async walkAncestors(
    threadId: string,
    ns: string,
    start: { from: SQL; depth: number },
    channels: string[],
  ): Promise<Row[]> {
    const { checkpoints: c, blobs: b, writes: w } = this.dialect.columns;
    const nsKey = this.dialect.nsKey(ns);
    const first = start.depth === 0 ? 1 : 0;
    const channelList = sql.join(
      channels.map((channel) => sql`${channel}`),
      sql`, `,
    );
    // The version each ancestor holds for a channel, to find that channel's blob.
    const versionOf = sql.join(
      channels.map(
        (channel) =>
          sql`(${b.channel} = ${channel} and ${b.version} = ${this.dialect.jsonField(sql`${c.channelVersions}`, channel)})`,
      ),
      sql` or `,
    );
    // The chain carries short keys only, so every database keeps it in memory.
    return this.dialect.query(sql`
      with recursive chain (checkpoint_id, parent_checkpoint_id, depth) as (
        select ${c.checkpointId}, ${c.parentCheckpointId}, 0 from ${c.table}
        where ${c.threadId} = ${threadId} and ${c.nsKey} = ${nsKey} and ${c.checkpointId} = ${start.from}
        union all
        select ${c.checkpointId}, ${c.parentCheckpointId}, chain.depth + 1
        from ${c.table} join chain on ${c.threadId} = ${threadId} and ${c.nsKey} = ${nsKey}
          and ${c.checkpointId} = chain.parent_checkpoint_id
        where chain.depth < ${WALK_DEPTH}
      )
      select 'write' as ${sql.identifier("kind")}, chain.depth as ${sql.identifier("depth")}, ${as(w.channel, "channel")},
             ${as(w.taskId, "task_id")}, ${as(w.idx, "idx")}, ${as(w.taskPath, "task_path")}, ${as(w.type, "type")},
             ${as(w.blob, "blob")}, null as ${sql.identifier("parent_checkpoint_id")}
      from chain join ${w.table} on ${w.threadId} = ${threadId} and ${w.nsKey} = ${nsKey}
        and ${w.checkpointId} = chain.checkpoint_id
      where chain.depth >= ${first} and ${w.channel} in (${channelList})
      union all
      select 'seed', seeds.depth, seeds.channel, null, null, null, seeds.type, seeds.blob, null from (
        select chain.depth as depth, ${as(b.channel, "channel")}, ${as(b.type, "type")}, ${as(b.blob, "blob")},
               row_number() over (partition by ${b.channel} order by chain.depth) as nearest
        from chain
        join ${c.table} on ${c.threadId} = ${threadId} and ${c.nsKey} = ${nsKey} and ${c.checkpointId} = chain.checkpoint_id
        join ${b.table} on ${b.threadId} = ${threadId} and ${b.nsKey} = ${nsKey} and (${versionOf})
        where chain.depth >= ${first} and ${b.type} <> 'empty'
      ) seeds where seeds.nearest = 1
      union all
      select 'link', chain.depth, null, null, null, null, null, null, chain.parent_checkpoint_id
      from chain where chain.depth = (select max(depth) from chain)`);
  }

  private tables(): { table: Table; threadId: Column }[] {
    const { checkpoints, blobs, writes } = this.dialect.columns;
    return [checkpoints, blobs, writes].map(({ table, threadId }) => ({ table, threadId }));
  }

  /** Threads after `cursor` in id order, with whether each is idle (see Dialect.threadActivity). */
  private async scanThreads(cursor: string, idleSince: Date): Promise<{ threadId: string; idle: boolean }[]> {
    const idleBefore = this.dialect.epochMillis(idleSince.getTime());
    const rows = await this.dialect.query(this.dialect.threadActivity(cursor, idleBefore, SCAN_THREADS));
    return rows.map((row) => ({ threadId: row.thread_id as string, idle: Number(row.idle) === 1 }));
  }

  /**
   * Deletes the checkpoints `choose` picks from one thread, with their writes and the
   * blobs no remaining checkpoint references, in one atomic unit. A remaining
   * checkpoint whose parent is deleted is re-linked to its nearest remaining ancestor.
   */
  private async removeCheckpoints(
    threadId: string,
    choose: (rows: StoredCheckpoint[]) => StoredCheckpoint[],
  ): Promise<void> {
    const { checkpoints: c, blobs: b, writes: w } = this.dialect.columns;
    const rows = (
      await this.dialect.query(sql`
        select ${as(c.checkpointNs, "ns")}, ${as(c.checkpointId, "checkpoint_id")},
               ${as(c.parentCheckpointId, "parent_checkpoint_id")}, ${as(c.channelVersions, "channel_versions")},
               ${as(c.metadata, "metadata")},
               row_number() over (partition by ${c.nsKey} order by ${c.checkpointId} desc) as ${sql.identifier("newest")}
        from ${c.table} where ${c.threadId} = ${threadId}`)
    ).map(
      (row): StoredCheckpoint => ({
        ns: row.ns as string,
        checkpointId: row.checkpoint_id as string,
        parentCheckpointId: (row.parent_checkpoint_id as string | null) ?? null,
        versions: parseJsonColumn(row.channel_versions) as Record<string, unknown>,
        metadata: fromStoredJson(parseJsonColumn(row.metadata)) as Record<string, unknown>,
        isLatest: Number(row.newest) === 1,
      }),
    );
    const removed = choose(rows);
    if (removed.length === 0) return;

    const statements: SQL[] = [];
    const namespaces = new Set(removed.map((row) => row.ns));
    for (const ns of namespaces) {
      const nsKey = this.dialect.nsKey(ns);
      const inNs = rows.filter((row) => row.ns === ns);
      const gone = new Set(removed.filter((row) => row.ns === ns).map((row) => row.checkpointId));
      const kept = inNs.filter((row) => !gone.has(row.checkpointId));
      const parentOf = new Map(inNs.map((row) => [row.checkpointId, row.parentCheckpointId]));

      for (const row of kept) {
        let parent = row.parentCheckpointId;
        while (parent !== null && gone.has(parent)) parent = parentOf.get(parent) ?? null;
        if (parent !== row.parentCheckpointId) {
          statements.push(
            sql`update ${c.table} set ${sql.identifier(c.parentCheckpointId.name)} = ${parent}
                where ${c.threadId} = ${threadId} and ${c.nsKey} = ${nsKey} and ${c.checkpointId} = ${row.checkpointId}`,
          );
        }
      }
      const referenced = (list: StoredCheckpoint[]) =>
        new Set(list.flatMap((row) => Object.entries(row.versions).map(([ch, v]) => JSON.stringify([ch, String(v)]))));
      const keptBlobs = referenced(kept);
      const orphanBlobs = [...referenced(inNs.filter((row) => gone.has(row.checkpointId)))]
        .filter((key) => !keptBlobs.has(key))
        .map((key) => JSON.parse(key) as [string, string]);
      for (const ids of chunks([...gone])) {
        const list = sql.join(
          ids.map((id) => sql`${id}`),
          sql`, `,
        );
        const where = sql`${c.threadId} = ${threadId} and ${c.nsKey} = ${nsKey} and ${c.checkpointId} in (${list})`;
        statements.push(sql`delete from ${c.table} where ${where}`);
        statements.push(
          sql`delete from ${w.table} where ${w.threadId} = ${threadId} and ${w.nsKey} = ${nsKey} and ${w.checkpointId} in (${list})`,
        );
      }
      for (const pairs of chunks(orphanBlobs)) {
        const list = sql.join(
          pairs.map(([channel, version]) => sql`(${channel}, ${version})`),
          sql`, `,
        );
        statements.push(
          sql`delete from ${b.table} where ${b.threadId} = ${threadId} and ${b.nsKey} = ${nsKey} and (${b.channel}, ${b.version}) in (${list})`,
        );
      }
    }
    await this.dialect.atomically(statements);
  }
}
