/**
 * Incremental channel values. When a channel's new value is an array that extends an
 * array this process wrote or read for the same (thread, namespace, channel), only the
 * appended elements are stored, with the versions of the values it extends.
 *
 * Skip-deltas keep every read bounded: the n-th value of a lineage (n = 0 is stored
 * whole) extends the value numbered n with its lowest set bit cleared, so it holds
 * the elements appended since then, and reassembling it reads popcount(n) + 1 rows,
 * at most log2(n) + 1. A whole value starts a new lineage.
 *
 * Extension is decided by content against what this process last wrote or read: each
 * element of the known value must still hold what it held then (snapshots.ts; an
 * element changed in place makes the value stored whole). And only when the new
 * checkpoint's parent is a checkpoint known to reference that value: the put then
 * locks the parent, which keeps the base rows (see remove.ts). Anything uncertain
 * (cold cache, another process, a fork elsewhere) is stored whole.
 */

import { snapshotOf, unchangedSince } from "./snapshots.js";
import { tupleKey } from "./values.js";

/** `type` of a stored delta: this prefix and the serializer's type of its elements. */
export const DELTA_TYPE_PREFIX = "delta:";

/** The `delta_chain` column: the value's number in its lineage and the versions it extends, whole value first. */
export interface StoredChain {
  seq: number;
  bases: string[];
}

/** A value of a lineage: its version, number and length. */
export interface LineageLink {
  version: string;
  seq: number;
  length: number;
}

/** What a reader knows of a stored array value besides its elements. */
export interface ValueLineage {
  seq: number;
  /** The values it extends, whole value first, with their lengths. */
  bases: LineageLink[];
}

interface CachedValue extends ValueLineage {
  /** A checkpoint whose channel_versions name this value. */
  checkpointId: string;
  version: string;
  /** What each element held when the value was stored or read (snapshots.ts). */
  items: unknown[];
}

/** A planned delta: the elements to store, the chain to record, and the value's snapshots. */
export interface DeltaPlan {
  appended: unknown[];
  chain: StoredChain;
  lineage: ValueLineage;
  snapshots: unknown[];
}

/** Only plain arrays: a subclass (or a DeltaSnapshot) may serialize differently. */
function isPlainArray(value: unknown): value is unknown[] {
  return Array.isArray(value) && Object.getPrototypeOf(value) === Array.prototype;
}

/** The values a lineage's n-th value is stored against: n with its set bits cleared one by one. */
export function baseSeqs(seq: number): number[] {
  const seqs: number[] = [];
  for (let n = seq & (seq - 1); ; n &= n - 1) {
    seqs.unshift(n);
    if (n === 0) return seqs;
  }
}

export function parseStoredChain(column: unknown): StoredChain | undefined {
  if (column === null || column === undefined) return undefined;
  const text = typeof column === "string" ? column : Buffer.from(column as Uint8Array).toString("utf8");
  const parsed = JSON.parse(text) as StoredChain;
  if (!Number.isInteger(parsed.seq) || parsed.seq < 1 || !Array.isArray(parsed.bases)) {
    throw new TypeError(`malformed delta_chain ${text}`);
  }
  if (parsed.bases.length !== baseSeqs(parsed.seq).length) throw new TypeError(`inconsistent delta_chain ${text}`);
  return parsed;
}

/** Recently written or read array values per (thread, namespace, channel), least recent forgotten first. */
export class DeltaCache {
  private readonly entries = new Map<string, CachedValue>();

  constructor(private readonly size: number) {}

  get enabled(): boolean {
    return this.size > 0;
  }

  /** The delta to store for `value` under a checkpoint whose parent is `parentId`, if it extends a known value. */
  plan(threadId: string, ns: string, channel: string, parentId: string | null, value: unknown): DeltaPlan | undefined {
    if (parentId === null || !isPlainArray(value)) return undefined;
    const known = this.entries.get(cacheKey(threadId, ns, channel));
    if (!known || known.checkpointId !== parentId || value.length < known.items.length) return undefined;
    for (let i = 0; i < known.items.length; i++) if (!unchangedSince(value[i], known.items[i])) return undefined;
    const seq = known.seq + 1;
    const lineage = [...known.bases, { version: known.version, seq: known.seq, length: known.items.length }];
    const wanted = baseSeqs(seq);
    const bases = wanted.map((n) => lineage.find((link) => link.seq === n));
    if (bases.some((link) => link === undefined)) return undefined;
    const links = bases as LineageLink[];
    const snapshots = known.items.slice();
    for (let i = known.items.length; i < value.length; i++) snapshots.push(snapshotOf(value[i]));
    return {
      appended: value.slice(links[links.length - 1].length),
      chain: { seq, bases: links.map((link) => link.version) },
      lineage: { seq, bases: links },
      snapshots,
    };
  }

  /**
   * What each element of a value holds now, to remember it by, when it may be remembered
   * (a plain array, deltas on); taken as the value is serialized, since the caller may
   * change its elements before the write ends.
   */
  snapshots(value: unknown): unknown[] | undefined {
    return this.enabled && isPlainArray(value) ? value.map(snapshotOf) : undefined;
  }

  /**
   * Records a value written or read at a checkpoint, by its elements' snapshots (taken
   * now unless given); anything but a plain array forgets the channel.
   */
  remember(
    key: { threadId: string; ns: string; checkpointId: string },
    channel: string,
    version: string,
    value: unknown,
    lineage: ValueLineage,
    snapshots: unknown[] | undefined = this.snapshots(value),
  ): void {
    if (!this.enabled) return;
    const name = cacheKey(key.threadId, key.ns, channel);
    this.entries.delete(name);
    if (snapshots === undefined || !isPlainArray(value)) return;
    // Fields named one by one: a spread followed by more fields took V8 about 1.7 us here.
    const entry = {
      seq: lineage.seq,
      bases: lineage.bases,
      checkpointId: key.checkpointId,
      version,
      items: snapshots,
    };
    this.entries.set(name, entry);
    if (this.entries.size > this.size) this.entries.delete(this.entries.keys().next().value as string);
  }

  /** A new checkpoint names an unchanged value: it becomes the checkpoint the value is known by. */
  carry(threadId: string, ns: string, channel: string, version: string, checkpointId: string): void {
    const known = this.entries.get(cacheKey(threadId, ns, channel));
    if (known && known.version === version) known.checkpointId = checkpointId;
  }
}

function cacheKey(threadId: string, ns: string, channel: string): string {
  return tupleKey([threadId, ns, channel]);
}
