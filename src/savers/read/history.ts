/**
 * `getDeltaChannelHistory`: a checkpoint's parent chain walked in one recursive query
 * instead of one `getTuple` per ancestor.
 */
import {
  type CheckpointPendingWrite,
  compareWritesSortKeys,
  type DeltaChannelHistory,
  type SerializerProtocol,
  writesSortKey,
} from "@langchain/langgraph-checkpoint";
import { type SQL, sql } from "drizzle-orm";
import type { Dialect, Row } from "../../dialects/dialect.js";
import { valueList } from "../../sql/statements.js";
import { blobKey, ValueAssembler } from "../values/delta-read.js";
import type { ValueSealing } from "../values/sealed-values.js";
import { as, asBytes } from "../values/values.js";

/** Ancestors walked by one query; below MariaDB's and MySQL's default recursion limit of 1000. */
const WALK_DEPTH = 900;

/** `getDeltaChannelHistory`: the parent chain walked in SQL instead of one `getTuple` per ancestor. */
export class DeltaChannelWalk {
  constructor(
    private readonly dialect: Dialect,
    private readonly serde: SerializerProtocol,
    private readonly sealing: ValueSealing,
  ) {
    this.assembler = new ValueAssembler(dialect, serde, sealing);
  }

  private readonly assembler: ValueAssembler;

  /**
   * LangGraph's delta-channel walk in one query: a recursive CTE follows the parent
   * chain, and joins the writes of the requested channels and each channel's nearest
   * stored value (through the JSON copy of channel_versions).
   */
  async walk(
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
          result[row.channel as string].seed = await this.seedValue(threadId, ns, row);
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
    const opened = this.sealing.openWrites(
      writes.map(({ row }) => ({ ...row, data: row.blob })),
      (row) => ({ threadId, ns, checkpointId: row.checkpoint_id as string }),
    );
    for (const row of opened) {
      const value = await this.serde.loadsTyped(row.type as string, asBytes(row.data));
      const write: CheckpointPendingWrite = [row.task_id as string, row.channel as string, value];
      result[row.channel as string].writes.push(write);
    }
    return result;
  }

  /**
   * A seed row's value; an incremental one is reassembled from the versions it extends.
   * Errors name the ancestor whose version it is.
   */
  private async seedValue(threadId: string, ns: string, row: Row): Promise<unknown> {
    const checkpointId = row.checkpoint_id as string;
    const blob: Row = { ...row, thread_id: threadId, checkpoint_ns: ns, data: row.blob };
    if (row.delta_chain === null || row.delta_chain === undefined) {
      const opened = this.sealing.openBlob(blob, checkpointId);
      return this.serde.loadsTyped(opened.type as string, asBytes(opened.data));
    }
    const blobs = new Map([[blobKey(threadId, ns, row.channel, row.version), blob]]);
    await this.assembler.addBases(blobs);
    const place = { key: { threadId, ns, checkpointId }, channel: row.channel as string };
    return (await this.assembler.decode(blob, blobs, place)).value;
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
    const channelList = valueList(channels);
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
             ${as(w.blob, "blob")}, null as ${sql.identifier("parent_checkpoint_id")},
             null as ${sql.identifier("version")}, null as ${sql.identifier("delta_chain")},
             chain.checkpoint_id as ${sql.identifier("checkpoint_id")}
      from chain join ${w.table} on ${w.threadId} = ${threadId} and ${w.nsKey} = ${nsKey}
        and ${w.checkpointId} = chain.checkpoint_id
      where chain.depth >= ${first} and ${w.channel} in (${channelList})
      union all
      select 'seed', seeds.depth, seeds.channel, null, null, null, seeds.type, seeds.blob, null, seeds.version,
             seeds.delta_chain, seeds.checkpoint_id from (
        select chain.depth as depth, chain.checkpoint_id as checkpoint_id, ${as(b.channel, "channel")}, ${as(b.type, "type")}, ${as(b.blob, "blob")},
               ${as(b.version, "version")}, ${as(b.deltaChain, "delta_chain")},
               row_number() over (partition by ${b.channel} order by chain.depth) as nearest
        from chain
        join ${c.table} on ${c.threadId} = ${threadId} and ${c.nsKey} = ${nsKey} and ${c.checkpointId} = chain.checkpoint_id
        join ${b.table} on ${b.threadId} = ${threadId} and ${b.nsKey} = ${nsKey} and (${versionOf})
        where chain.depth >= ${first} and ${b.type} <> 'empty'
      ) seeds where seeds.nearest = 1
      union all
      select 'link', chain.depth, null, null, null, null, null, null, chain.parent_checkpoint_id, null, null, null
      from chain where chain.depth = (select max(depth) from chain)`);
  }
}
