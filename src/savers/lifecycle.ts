import {
  type CheckpointPendingWrite,
  compareWritesSortKeys,
  type DeltaChannelHistory,
  type SerializerProtocol,
  writesSortKey,
} from "@langchain/langgraph-checkpoint";
import { type Column, getTableColumns, type SQL, sql, type Table } from "drizzle-orm";
import type { Dialect } from "./dialect.js";
import { fromStoredJson } from "./metadata.js";
import { as, asBytes, InvalidInputError, parseJsonColumn, requireId } from "./values.js";

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
/** Ids per `in (...)` list, well below every driver's parameter limit. */
const CHUNK = 500;

interface StoredCheckpoint {
  ns: string;
  checkpointId: string;
  parentCheckpointId: string | null;
  versions: Record<string, unknown>;
  metadata: Record<string, unknown>;
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
      await this.dialect.atomically(
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
      await this.removeCheckpoints(threadId, (rows) => {
        const newest = new Map<string, string>();
        for (const row of rows) {
          if ((newest.get(row.ns) ?? "") < row.checkpointId) newest.set(row.ns, row.checkpointId);
        }
        return rows.filter((row) => newest.get(row.ns) !== row.checkpointId);
      });
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
        chunk.map((runId) => this.dialect.metadataMatches([["run_id", runId]])),
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
    if (channels.length === 0) return result;
    const { checkpoints: c, blobs: b, writes: w } = this.dialect.columns;
    const nsKey = this.dialect.nsKey(ns);
    const target =
      checkpointId === undefined
        ? sql`(select max(${c.checkpointId}) from ${c.table} where ${c.threadId} = ${threadId} and ${c.nsKey} = ${nsKey})`
        : sql`${checkpointId}`;
    const channelList = sql.join(
      channels.map((channel) => sql`${channel}`),
      sql`, `,
    );
    // The version each ancestor holds for a channel, to find that channel's blob.
    const versionOf = sql.join(
      channels.map(
        (channel) =>
          sql`(${b.channel} = ${channel} and ${b.version} = ${this.dialect.jsonField(sql.raw("chain.channel_versions"), channel)})`,
      ),
      sql` or `,
    );
    const rows = await this.dialect.query(sql`
      with recursive chain (checkpoint_id, parent_checkpoint_id, channel_versions, depth) as (
        select ${c.checkpointId}, ${c.parentCheckpointId}, ${c.channelVersions}, 0 from ${c.table}
        where ${c.threadId} = ${threadId} and ${c.nsKey} = ${nsKey} and ${c.checkpointId} = ${target}
        union all
        select ${c.checkpointId}, ${c.parentCheckpointId}, ${c.channelVersions}, chain.depth + 1
        from ${c.table} join chain on ${c.threadId} = ${threadId} and ${c.nsKey} = ${nsKey}
          and ${c.checkpointId} = chain.parent_checkpoint_id
      )
      select 'write' as ${sql.identifier("kind")}, chain.depth as ${sql.identifier("depth")}, ${as(w.channel, "channel")},
             ${as(w.taskId, "task_id")}, ${as(w.idx, "idx")}, ${as(w.taskPath, "task_path")}, ${as(w.type, "type")},
             ${as(w.blob, "blob")}
      from chain join ${w.table} on ${w.threadId} = ${threadId} and ${w.nsKey} = ${nsKey}
        and ${w.checkpointId} = chain.checkpoint_id
      where chain.depth > 0 and ${w.channel} in (${channelList})
      union all
      select 'seed', seeds.depth, seeds.channel, null, null, null, seeds.type, seeds.blob from (
        select chain.depth as depth, ${as(b.channel, "channel")}, ${as(b.type, "type")}, ${as(b.blob, "blob")},
               row_number() over (partition by ${b.channel} order by chain.depth) as nearest
        from chain join ${b.table} on ${b.threadId} = ${threadId} and ${b.nsKey} = ${nsKey} and (${versionOf})
        where chain.depth > 0 and ${b.type} <> 'empty'
      ) seeds where seeds.nearest = 1`);

    const seedDepth = new Map<string, number>();
    for (const row of rows) {
      if (row.kind !== "seed") continue;
      const channel = row.channel as string;
      seedDepth.set(channel, Number(row.depth));
      result[channel].seed = await this.serde.loadsTyped(row.type as string, asBytes(row.blob));
    }
    // Oldest ancestor first; within one checkpoint, LangGraph's (task path, task id, idx) order.
    const writes = rows
      .filter((row) => row.kind === "write" && Number(row.depth) <= (seedDepth.get(row.channel as string) ?? Infinity))
      .map((row) => ({
        row,
        depth: Number(row.depth),
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

  private tables(): { table: Table; threadId: Column }[] {
    const { checkpoints, blobs, writes } = this.dialect.columns;
    return [checkpoints, blobs, writes].map(({ table, threadId }) => ({ table, threadId }));
  }

  /**
   * Threads after `cursor` in id order with whether each is idle, found by a skip
   * scan: one index probe per thread for the next id and one for its newest time,
   * never a read of every checkpoint.
   */
  private async scanThreads(cursor: string, idleSince: Date): Promise<{ threadId: string; idle: boolean }[]> {
    const c = this.dialect.columns.checkpoints;
    const rows = await this.dialect.query(sql`
      with recursive threads (thread_id, n) as (
        select min(${c.threadId}), 1 from ${c.table} where ${c.threadId} > ${cursor}
        union all
        select (select min(${c.threadId}) from ${c.table} where ${c.threadId} > threads.thread_id), threads.n + 1
        from threads where threads.thread_id is not null and threads.n < ${SCAN_THREADS}
      )
      select threads.thread_id as ${sql.identifier("thread_id")},
        case when (select max(${c.createdAt}) from ${c.table} where ${c.threadId} = threads.thread_id)
          < ${this.dialect.epochMillis(idleSince.getTime())} then 1 else 0 end as ${sql.identifier("idle")}
      from threads where threads.thread_id is not null
      order by threads.thread_id`);
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
               ${as(c.metadata, "metadata")}
        from ${c.table} where ${c.threadId} = ${threadId}`)
    ).map(
      (row): StoredCheckpoint => ({
        ns: row.ns as string,
        checkpointId: row.checkpoint_id as string,
        parentCheckpointId: (row.parent_checkpoint_id as string | null) ?? null,
        versions: parseJsonColumn(row.channel_versions) as Record<string, unknown>,
        metadata: fromStoredJson(parseJsonColumn(row.metadata)) as Record<string, unknown>,
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
