/**
 * The read path, `getTuple` and `list`: the conditions of a page from the config and the
 * list options, and the rows of a page turned into checkpoint tuples.
 */
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  compareWritesSortKeys,
  maxChannelVersion,
  type SerializerProtocol,
  TASKS,
  writesSortKey,
} from "@langchain/langgraph-checkpoint";
import { type SQL, sql } from "drizzle-orm";
import type { Dialect, Row } from "../../dialects/dialect.js";
import { InvalidInputError } from "../../errors.js";
import { filterDocument } from "../../sql/json.js";
import type { Templates, Values } from "../../sql/statements.js";
import { blobKey, type ReadValue, ValueAssembler } from "../values/delta-read.js";
import type { DeltaCache } from "../values/deltas.js";
import { parseMetadata, storedFilterEntries } from "../values/metadata.js";
import { notStaging, requireThreadId } from "../values/reserved.js";
import type { ValueSealing } from "../values/sealed-values.js";
import { decodeStored, type StoredValuePlace } from "../values/stored-values.js";
import { as, type CheckpointKey, configOf, keyOf, optionalNamespace, requireId, rowKey } from "../values/values.js";
import { nextChannelVersion, readCheckpointVersions } from "../write/versions.js";
import { groupPageRows, pageQuery, queryPageAtOnce, queryPageByKeys } from "./pages.js";

/** Conditions on the checkpoints table for one page; `key` names their shape when they are reusable. */
interface PageCondition {
  /** Built only when the page's statement is not cached yet. */
  where: () => SQL;
  values: Values;
  key?: string;
  /**
   * The conditions fix one thread and namespace, so the checkpoint id alone orders the
   * rows: MySQL cannot order by the namespace (a BLOB) through an index and would sort
   * the whole thread to find its newest checkpoint.
   */
  oneThreadAndNamespace?: boolean;
  /** The namespace the conditions ask for, if one: every row read must name it. */
  ns?: string;
}

/** Page size when `list` streams a long history. */
const LIST_PAGE_SIZE = 100;
/**
 * Pages up to this size fetch their chains' bases in the same statement (one round trip,
 * where the dialect can); a larger page's generic plan is estimated costly enough for
 * PostgreSQL to JIT-compile it, so its bases come in a second query.
 */
const PAGE_WITH_BASES = 10;

/** The read path: `getTuple` and `list`, a page of checkpoints at a time. */
export class CheckpointReader {
  constructor(
    private readonly dialect: Dialect,
    private readonly serde: SerializerProtocol,
    private readonly templates: Templates,
    private readonly deltas: DeltaCache,
    private readonly sealing: ValueSealing,
  ) {
    this.assembler = new ValueAssembler(dialect, serde, sealing);
  }

  private readonly assembler: ValueAssembler;

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const configurable = (config?.configurable ?? {}) as Record<string, unknown>;
    // The LangGraph contract: reading without a thread finds nothing (it is not an error).
    if (configurable.thread_id === undefined) return undefined;
    const threadId = requireThreadId(configurable.thread_id);
    const ns = optionalNamespace(configurable.checkpoint_ns) ?? "";
    const checkpointId = configurable.checkpoint_id;
    const c = this.dialect.columns.checkpoints;
    const values: Values = { "page.thread": threadId, "page.ns": this.dialect.nsKey(ns) };
    if (checkpointId !== undefined) values["page.id"] = requireId(checkpointId, "checkpoint_id");
    const key = checkpointId === undefined ? "getTuple.latest" : "getTuple.id";
    const where = () => {
      const conditions = [
        sql`${c.threadId} = ${sql.placeholder("page.thread")}`,
        sql`${c.nsKey} = ${sql.placeholder("page.ns")}`,
      ];
      if (checkpointId !== undefined) conditions.push(sql`${c.checkpointId} = ${sql.placeholder("page.id")}`);
      else if (this.dialect.newestCheckpoint) {
        conditions.push(
          this.dialect.newestCheckpoint(sql`${sql.placeholder("page.thread")}`, sql`${sql.placeholder("page.ns")}`),
        );
      }
      return sql.join(conditions, sql` and `);
    };
    // What getTuple returns is what the next put most likely extends (deltas.ts).
    const { tuples } = await this.loadPage(
      { where, values, key, oneThreadAndNamespace: true, ns },
      1,
      (place, version, read) =>
        this.deltas.remember(place.key, place.channel as string, version, read.value, read.lineage),
    );
    return tuples[0];
  }

  /**
   * A `list` call's conditions, with their values in placeholders (so a list without a
   * filter reuses its statement), and the statement's shape: its template key, or
   * undefined when a filter is written inline.
   */
  private listConditions(
    config: RunnableConfig,
    options: CheckpointListOptions,
  ): { conditions: SQL[]; values: Values; shape: string | undefined; ns: string | undefined } {
    const configurable = (config?.configurable ?? {}) as Record<string, unknown>;
    const c = this.dialect.columns.checkpoints;
    const conditions: SQL[] = [];
    const values: Values = {};
    const condition = (name: string, value: unknown, build: (placeholder: SQL) => SQL) => {
      values[name] = value;
      conditions.push(build(sql`${sql.placeholder(name)}`));
    };
    if (configurable.thread_id !== undefined) {
      condition("page.thread", requireThreadId(configurable.thread_id), (p) => sql`${c.threadId} = ${p}`);
    } else {
      // Across threads: never the rows of a thread an import is still staging.
      conditions.push(notStaging(c.threadId));
    }
    const ns = optionalNamespace(configurable.checkpoint_ns);
    if (ns !== undefined) condition("page.ns", this.dialect.nsKey(ns), (p) => sql`${c.nsKey} = ${p}`);
    if (configurable.checkpoint_id !== undefined) {
      const id = requireId(configurable.checkpoint_id, "checkpoint_id");
      condition("page.id", id, (p) => sql`${c.checkpointId} = ${p}`);
    }
    const before = options.before?.configurable?.checkpoint_id;
    if (before !== undefined) {
      condition("page.before", requireId(before, "before.checkpoint_id"), (p) => sql`${c.checkpointId} < ${p}`);
    }
    const entries = storedFilterEntries(options.filter);
    const { metadataFilterTemplate } = this.dialect;
    if (entries.length > 0 && metadataFilterTemplate) {
      condition("page.filter", filterDocument(entries), (p) => metadataFilterTemplate(p));
    } else if (entries.length > 0) {
      conditions.push(this.dialect.metadataMatches(entries));
    }
    // Values inline (metadataMatches) make the statement one-off; otherwise it is a template.
    const shape = entries.length > 0 && !metadataFilterTemplate ? undefined : `list.${Object.keys(values).join(",")}`;
    return { conditions, values, shape, ns };
  }

  /** `beforePage` runs before each page is read (it throws to stop the listing: the saver closed). */
  async *list(
    config: RunnableConfig,
    options: CheckpointListOptions = {},
    beforePage: () => void = () => {},
  ): AsyncGenerator<CheckpointTuple> {
    const c = this.dialect.columns.checkpoints;
    const { conditions, values, shape, ns } = this.listConditions(config, options);
    const { limit } = options;
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 0)) {
      throw new InvalidInputError(`limit must be a non-negative integer, got ${limit}`);
    }
    let remaining = limit ?? Number.POSITIVE_INFINITY;
    let cursor: CheckpointKey | undefined;
    while (remaining > 0) {
      const page = [...conditions];
      // Keyset pagination in the same order as the query: checkpoint_id, thread, namespace, all descending.
      if (cursor) {
        values["cursor.id"] = cursor.checkpointId;
        values["cursor.thread"] = cursor.threadId;
        values["cursor.ns"] = cursor.ns;
        const [id, thread, cursorNs] = ["cursor.id", "cursor.thread", "cursor.ns"].map(sql.placeholder);
        page.push(
          sql`(${c.checkpointId} < ${id} or (${c.checkpointId} = ${id} and (${c.threadId} < ${thread} or (${c.threadId} = ${thread} and ${c.checkpointNs} < ${cursorNs}))))`,
        );
      }
      const size = Math.min(remaining, LIST_PAGE_SIZE);
      const where = () => (page.length > 0 ? sql.join(page, sql` and `) : sql`1 = 1`);
      const key = shape && `${shape}${cursor ? ".cursor" : ""}`;
      beforePage();
      const { tuples, last } = await this.loadPage({ where, values, key, ns }, size);
      for (const tuple of tuples) yield tuple;
      if (tuples.length < size) return;
      remaining -= tuples.length;
      cursor = last;
    }
  }

  /**
   * One page of checkpoints with everything a tuple needs: the checkpoint rows, the
   * blobs their channel_versions name (each blob once, however many checkpoints of
   * the page share it) and their pending writes.
   */
  private async loadPage(
    { where, values, key, oneThreadAndNamespace, ns }: PageCondition,
    limit: number,
    onValue?: OnValue,
  ): Promise<{ tuples: CheckpointTuple[]; last?: CheckpointKey }> {
    // Built only when the page's template is not cached yet (pageKey names its shape).
    const page = () => pageQuery(this.dialect, where(), limit, oneThreadAndNamespace === true);
    const pageKey = key && `${key}.${limit}`;
    const rows = this.dialect.pageBlobs
      ? await queryPageAtOnce(this.dialect, this.templates, page, values, pageKey, limit <= PAGE_WITH_BASES)
      : await queryPageByKeys(this.dialect, this.templates, this.templates.statement(pageKey, page, values));
    const { checkpointRows, blobs, writes } = groupPageRows(rows);
    await this.assembler.addBases(blobs);
    const tuples = await Promise.all(checkpointRows.map((row) => this.toTuple(row, blobs, writes, ns, onValue)));
    const lastRow = checkpointRows[checkpointRows.length - 1];
    return { tuples, last: lastRow ? rowKey(lastRow) : undefined };
  }

  /** A checkpoint row of a page, with its values from the page's blobs and its pending writes. */
  private async toTuple(
    row: Row,
    blobs: Map<string, Row>,
    writes: Map<string, Row[]>,
    ns: string | undefined,
    onValue?: OnValue,
  ): Promise<CheckpointTuple> {
    const key = rowKey(row);
    this.sealing.requireNamespace(key, ns);
    const stored = (await decodeStored(this.serde, row.type, row.data, { key })) as Checkpoint;
    const channelValues: Record<string, unknown> = {};
    for (const [channel, version] of Object.entries(stored.channel_versions ?? {})) {
      const blob = blobs.get(blobKey(key.threadId, key.ns, channel, version));
      if (!blob || blob.type === "empty") continue;
      const read = await this.assembler.decode(blob, blobs, { key, channel });
      channelValues[channel] = read.value;
      onValue?.({ key, channel }, String(version), read);
    }
    const checkpoint = readCheckpointVersions({ ...stored, channel_values: channelValues });
    const parentId = (row.parent_checkpoint_id as string | null) ?? null;
    if (checkpoint.v < 4 && parentId !== null)
      await this.migratePendingSends(checkpoint, { ...key, checkpointId: parentId });
    return {
      config: configOf(key),
      checkpoint,
      metadata: parseMetadata(row.metadata) as CheckpointMetadata,
      parentConfig: parentId ? configOf({ ...key, checkpointId: parentId }) : undefined,
      pendingWrites: await this.decodeWrites(writes.get(keyOf(key)) ?? [], key),
    };
  }

  /** Pending writes in LangGraph's (task path, task id, idx) order. */
  private async decodeWrites(rows: Row[], key: CheckpointKey): Promise<CheckpointPendingWrite[]> {
    const sorted = rows
      .map((row) => ({ row, sortKey: writesSortKey(row.task_path as string, row.task_id as string, Number(row.idx)) }))
      .sort((x, y) => compareWritesSortKeys(x.sortKey, y.sortKey));
    // Every write opened before any is decoded: a read that meets a bad one returns nothing.
    const opened = this.sealing.openWrites(
      sorted.map(({ row }) => row),
      () => key,
    );
    return Promise.all(
      opened.map(
        async (row): Promise<CheckpointPendingWrite> => [
          row.task_id as string,
          row.channel as string,
          await decodeStored(this.serde, row.type, row.data, {
            key,
            channel: row.channel as string,
            taskId: row.task_id as string,
          }),
        ],
      ),
    );
  }

  /**
   * Checkpoints older than format v4 kept pending sends as writes to the TASKS channel
   * of their parent; LangGraph now expects them among the channel values.
   */
  private async migratePendingSends(checkpoint: Checkpoint, parent: CheckpointKey): Promise<void> {
    const w = this.dialect.columns.writes;
    const rows = await this.dialect.query(sql`
      select ${as(w.taskId, "task_id")}, ${as(w.idx, "idx")}, ${as(w.channel, "channel")}, ${as(w.type, "type")},
             ${as(w.blob, "data")}, ${as(w.taskPath, "task_path")}
      from ${w.table}
      where ${w.threadId} = ${parent.threadId} and ${w.nsKey} = ${this.dialect.nsKey(parent.ns)}
        and ${w.checkpointId} = ${parent.checkpointId} and ${w.channel} = ${TASKS}`);
    if (rows.length > 0)
      this.applyPendingSends(
        checkpoint,
        (await this.decodeWrites(rows, parent)).map(([, , value]) => value),
      );
  }

  private applyPendingSends(checkpoint: Checkpoint, sends: unknown[]): void {
    checkpoint.channel_values[TASKS] = sends;
    const versions = Object.values(checkpoint.channel_versions);
    checkpoint.channel_versions[TASKS] =
      versions.length > 0 ? maxChannelVersion(...versions) : (nextChannelVersion(undefined) as unknown as number);
  }
}

/** Called with each value a page decodes (getTuple remembers them for the next put's deltas). */
type OnValue = (place: StoredValuePlace, version: string, read: ReadValue) => void;
