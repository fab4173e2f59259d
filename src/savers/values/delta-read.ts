/**
 * Reading incremental values back: the base rows a page's deltas extend, fetched in one
 * query, and each value reassembled from its chain.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { type SQL, sql } from "drizzle-orm";
import type { Dialect, Row } from "../../dialects/dialect.js";
import { SerializationError } from "../../errors.js";
import { Templates, type Values } from "../../sql/statements.js";
import { chunks } from "../threads/remove.js";
import { baseSeqs, DELTA_TYPE_PREFIX, type LineageLink, parseStoredChain, type ValueLineage } from "./deltas.js";
import type { ValueSealing } from "./sealed-values.js";
import { decodeStored, type StoredValuePlace } from "./stored-values.js";
import { as, tupleKey } from "./values.js";

/** A stored value read back, with its place in its lineage (deltas.ts). */
export interface ReadValue {
  value: unknown;
  lineage: ValueLineage;
}

/** A whole value: the start of a lineage. */
export const WHOLE: ValueLineage = { seq: 0, bases: [] };

/** The key of a blob row in the maps of blobs a reader keeps. */
export function blobKey(threadId: unknown, ns: unknown, channel: unknown, version: unknown): string {
  return tupleKey([threadId, ns, channel, String(version)]);
}

/**
 * Reassembles incremental values: a delta row names the versions it extends, at most
 * log2(n) + 1 rows, all read by one query for a whole page.
 */
export class ValueAssembler {
  constructor(
    private readonly dialect: Dialect,
    private readonly serde: SerializerProtocol,
    private readonly sealing: ValueSealing,
  ) {}

  private readonly templates = new Templates();

  /** Adds to `blobs` (rows by {@link blobKey}) the bases its delta rows name that it lacks, in one query. */
  async addBases(blobs: Map<string, Row>): Promise<void> {
    const missing = new Map<string, { threadId: string; ns: string; pairs: Map<string, [string, string]> }>();
    for (const row of blobs.values()) {
      const chain = readChain(row);
      if (!chain) continue;
      for (const version of chain.bases) {
        if (blobs.has(blobKey(row.thread_id, row.checkpoint_ns, row.channel, version))) continue;
        const group = tupleKey([row.thread_id, row.checkpoint_ns]);
        const entry = missing.get(group) ?? {
          threadId: row.thread_id as string,
          ns: row.checkpoint_ns as string,
          pairs: new Map(),
        };
        missing.set(group, entry);
        entry.pairs.set(tupleKey([row.channel, version]), [row.channel as string, version]);
      }
    }
    const groups = [...missing.values()].flatMap(({ threadId, ns, pairs }) =>
      chunks([...pairs.values()]).map((chunk) => ({ threadId, ns, pairs: chunk })),
    );
    if (groups.length === 0) return;
    const values: Values = {};
    groups.forEach(({ threadId, ns, pairs }, g) => {
      values[`base${g}.thread`] = threadId;
      values[`base${g}.ns`] = this.dialect.nsKey(ns);
      pairs.forEach(([channel, version], k) => {
        values[`base${g}.channel${k}`] = channel;
        values[`base${g}.version${k}`] = version;
      });
    });
    // A template per shape (pairs per group), compiled once: this runs on every read of
    // an incremental value where the dialect cannot fetch the bases with the page.
    const shape = groups.map(({ pairs }) => pairs.length).join(",");
    const rows = await this.dialect.query(
      this.templates.statement(`bases.${shape}`, () => this.basesQuery(groups), values),
    );
    for (const row of rows) blobs.set(blobKey(row.thread_id, row.checkpoint_ns, row.channel, row.version), row);
  }

  /** The blob rows of the given (thread, namespace) groups' (channel, version) pairs, with placeholders. */
  private basesQuery(groups: { pairs: [string, string][] }[]): SQL {
    const b = this.dialect.columns.blobs;
    const p = sql.placeholder;
    const conditions = groups.map(({ pairs }, g) => {
      const list = sql.join(
        pairs.map((_, k) => sql`(${p(`base${g}.channel${k}`)}, ${p(`base${g}.version${k}`)})`),
        sql`, `,
      );
      return sql`(${b.threadId} = ${p(`base${g}.thread`)} and ${b.nsKey} = ${p(`base${g}.ns`)} and (${b.channel}, ${b.version}) in (${list}))`;
    });
    return sql`
      select ${as(b.threadId, "thread_id")}, ${as(b.checkpointNs, "checkpoint_ns")}, ${as(b.channel, "channel")},
             ${as(b.version, "version")}, ${as(b.type, "type")}, ${as(b.blob, "data")}, ${as(b.deltaChain, "delta_chain")}
      from ${b.table} where ${sql.join(conditions, sql` or `)}`;
  }

  /** The value of a blob row, whole or reassembled from the rows in `blobs` (see addBases). */
  async decode(sealed: Row, blobs: Map<string, Row>, place: StoredValuePlace): Promise<ReadValue> {
    const row = this.sealing.openBlob(sealed, place.key.checkpointId || undefined);
    const chain = readChain(row, place);
    if (!chain) return { value: await decodeStored(this.serde, row.type, row.data, place), lineage: WHOLE };
    const seqs = baseSeqs(chain.seq);
    const items: unknown[] = [];
    const bases: LineageLink[] = [];
    for (const [i, version] of chain.bases.entries()) {
      const base = blobs.get(blobKey(row.thread_id, row.checkpoint_ns, row.channel, version));
      if (!base) throw failure(place, `the version ${JSON.stringify(version)} it extends is missing`);
      append(items, await this.part(this.sealing.openBlob(base, place.key.checkpointId || undefined), i === 0, place));
      bases.push({ version, seq: seqs[i], length: items.length });
    }
    append(items, await this.part(row, false, place));
    return { value: items, lineage: { seq: chain.seq, bases } };
  }

  /** The elements of one row of a chain: the whole value first, then each delta's appended elements. */
  private async part(row: Row, whole: boolean, place: StoredValuePlace): Promise<unknown[]> {
    const type = String(row.type);
    const isDelta = type.startsWith(DELTA_TYPE_PREFIX);
    if (whole === isDelta || (whole && readChain(row, place))) {
      throw failure(place, `its chain has a ${whole ? "delta" : "whole value"} where it needs the other`);
    }
    const value = await decodeStored(this.serde, whole ? type : type.slice(DELTA_TYPE_PREFIX.length), row.data, place);
    if (!Array.isArray(value)) throw failure(place, "a part of its chain is not an array");
    return value;
  }
}

function readChain(row: Row, place?: StoredValuePlace) {
  try {
    return parseStoredChain(row.delta_chain);
  } catch (error) {
    if (!place) return undefined;
    throw failure(place, error instanceof Error ? error.message : String(error));
  }
}

function append(items: unknown[], part: unknown[]): void {
  for (const item of part) items.push(item);
}

function failure(place: StoredValuePlace, reason: string): SerializationError {
  const channel = JSON.stringify(place.channel);
  return new SerializationError(
    `cannot read the incremental value of channel ${channel} of thread ${JSON.stringify(place.key.threadId)}, checkpoint ${JSON.stringify(place.key.checkpointId)}: ${reason}`,
  );
}
