/**
 * Deletes chosen checkpoints of one thread with their writes and the blobs no remaining
 * checkpoint references, re-linking the survivors; pruning, expiry and sweeps use it.
 */
import { type Column, type SQL, sql } from "drizzle-orm";
import type { Dialect, Precondition } from "../../dialects/dialect.js";
import { inPieces, valueList } from "../../sql/statements.js";
import { parseStoredChain } from "../values/deltas.js";
import { fromStoredJson } from "../values/metadata.js";
import { as, parseJsonColumn, tupleKey } from "../values/values.js";
import { holdingThread } from "./thread-lock.js";

/** Ids per `in (...)` list, well below every driver's parameter limit. */
const CHUNK = 500;

export interface StoredCheckpoint {
  ns: string;
  checkpointId: string;
  parentCheckpointId: string | null;
  versions: Record<string, unknown>;
  metadata: Record<string, unknown>;
  /**
   * 1 for the newest of its namespace in the database's order (the one getTuple and list
   * return first), 2 for the one before, and so on.
   */
  rank: number;
}

export function chunks<T>(items: T[]): T[][] {
  return inPieces(items, CHUNK);
}

/**
 * Deletes the checkpoints `choose` picks from one thread, with their writes and the
 * blobs no remaining checkpoint references. A remaining checkpoint whose parent is
 * deleted is re-linked to its nearest remaining ancestor.
 *
 * Two atomic units, so that a put racing the removal is never left partial (and the
 * thread's row recomputed between them, see Dialect.refreshThread). The first
 * deletes the checkpoints: a put whose parent is among them holds that parent's lock,
 * so it either commits first (and is kept: it is not among the chosen) or finds its
 * parent gone and writes nothing (MissingParentError). The second decides which blobs
 * are orphans on what remains once the first has committed, so the values a put that
 * landed meanwhile refers to stay. A put landing after that refers only to values a
 * remaining checkpoint also refers to, or to values it wrote itself.
 *
 * With a `claim` (a sweep's), the first unit writes only when the claim's rows exist
 * when it runs (else its error is thrown and nothing was removed), and each of its
 * statements also carries the claim's `guard` condition in SQL.
 * Returns whether any checkpoint was removed.
 */
export async function removeCheckpoints(
  dialect: Dialect,
  threadId: string,
  choose: (rows: StoredCheckpoint[]) => StoredCheckpoint[],
  claim?: { precondition: Precondition; guard: SQL },
): Promise<boolean> {
  const before = await readThread(dialect, threadId);
  const removed = choose(before);
  if (removed.length === 0) return false;
  const guard = claim ? sql` and ${claim.guard}` : sql``;
  const gone = new Set(removed.map((row) => JSON.stringify([row.ns, row.checkpointId])));
  const isGone = (ns: string, id: string | null) => id !== null && gone.has(JSON.stringify([ns, id]));
  const parentOf = new Map(before.map((row) => [JSON.stringify([row.ns, row.checkpointId]), row.parentCheckpointId]));
  const relinks = (rows: StoredCheckpoint[], condition: SQL) =>
    rows.flatMap((row) => {
      let parent = row.parentCheckpointId;
      while (isGone(row.ns, parent)) parent = parentOf.get(JSON.stringify([row.ns, parent])) ?? null;
      return parent === row.parentCheckpointId ? [] : [relink(dialect, threadId, row, parent, condition)];
    });

  const { checkpoints: c, writes: w } = dialect.columns;
  const deletes: SQL[] = [];
  for (const ns of new Set(removed.map((row) => row.ns))) {
    // Ascending in the database's order: the rank counts down from the newest.
    const ids = removed
      .filter((row) => row.ns === ns)
      .sort((a, b) => b.rank - a.rank)
      .map((row) => row.checkpointId);
    for (const chunk of chunks(ids)) {
      const key = (table: typeof c | typeof w) =>
        sql`${table.threadId} = ${threadId} and ${table.nsKey} = ${dialect.nsKey(ns)} and ${inOrderedList(table.checkpointId, chunk)}${guard}`;
      deletes.push(sql`delete from ${c.table} where ${key(c)}`, sql`delete from ${w.table} where ${key(w)}`);
    }
  }
  const remaining = before.filter((row) => !isGone(row.ns, row.checkpointId));
  const unit = [...relinks(remaining, guard), ...deletes];
  await (claim ? dialect.atomically(unit, claim.precondition) : holdingThread(dialect, threadId, unit));
  await dialect.refreshThread(threadId);

  // What remains now includes any put that committed while the checkpoints were deleted.
  const after = await readThread(dialect, threadId);
  const known = new Set(before.map((row) => JSON.stringify([row.ns, row.checkpointId])));
  const newcomers = after.filter((row) => !known.has(JSON.stringify([row.ns, row.checkpointId])));
  const blobs = await readBlobKeys(dialect, threadId);
  // The claim is over (its unit committed): what follows must run whatever the thread's row says now.
  const cleanup = [...relinks(newcomers, sql``), ...orphanBlobDeletes(dialect, threadId, removed, after, blobs)];
  if (cleanup.length > 0) await holdingThread(dialect, threadId, cleanup);
  return true;
}

async function readThread(dialect: Dialect, threadId: string): Promise<StoredCheckpoint[]> {
  const c = dialect.columns.checkpoints;
  const rows = await dialect.query(sql`
    select ${as(c.checkpointNs, "ns")}, ${as(c.checkpointId, "checkpoint_id")},
           ${as(c.parentCheckpointId, "parent_checkpoint_id")}, ${as(c.channelVersions, "channel_versions")},
           ${as(c.metadata, "metadata")},
           row_number() over (partition by ${c.nsKey} order by ${c.checkpointId} desc) as ${sql.identifier("newest")}
    from ${c.table} where ${c.threadId} = ${threadId}`);
  return rows.map((row) => ({
    ns: row.ns as string,
    checkpointId: row.checkpoint_id as string,
    parentCheckpointId: (row.parent_checkpoint_id as string | null) ?? null,
    versions: parseJsonColumn(row.channel_versions) as Record<string, unknown>,
    metadata: fromStoredJson(parseJsonColumn(row.metadata)) as Record<string, unknown>,
    rank: Number(row.newest),
  }));
}

/** `condition`: "" or " and <a claim's guard>". */
function relink(dialect: Dialect, threadId: string, row: StoredCheckpoint, parent: string | null, condition: SQL): SQL {
  const c = dialect.columns.checkpoints;
  return sql`update ${c.table} set ${sql.identifier(c.parentCheckpointId.name)} = ${parent}
    where ${c.threadId} = ${threadId} and ${c.nsKey} = ${dialect.nsKey(row.ns)} and ${c.checkpointId} = ${row.checkpointId}${condition}`;
}

/** A stored value's key, and the versions it extends when it is incremental. */
interface BlobKey {
  ns: string;
  channel: string;
  version: string;
  bases: string[] | undefined;
}

/** The keys of the thread's stored values, in the database's order of its primary key. */
async function readBlobKeys(dialect: Dialect, threadId: string): Promise<BlobKey[]> {
  const b = dialect.columns.blobs;
  const rows = await dialect.query(sql`
    select ${as(b.checkpointNs, "ns")}, ${as(b.channel, "channel")}, ${as(b.version, "version")},
           ${as(b.deltaChain, "delta_chain")}
    from ${b.table} where ${b.threadId} = ${threadId}
    order by ${b.nsKey}, ${b.channel}, ${b.version}`);
  return rows.map((row) => ({
    ns: row.ns as string,
    channel: row.channel as string,
    version: String(row.version),
    bases: row.delta_chain == null ? undefined : parseStoredChain(row.delta_chain)?.bases,
  }));
}

/**
 * `column in (values)` for values in the database's ascending order of `column`, with the
 * range they span. The range bounds what an index scan reads whatever the plan: a generic
 * plan, or one that thinks a long thread short, otherwise tests every row of the thread
 * against the whole list, so that removing n values of a thread cost about n squared.
 */
function inOrderedList(column: Column, ordered: unknown[]): SQL {
  const [low, high] = [ordered[0], ordered[ordered.length - 1]];
  return sql`${column} >= ${low} and ${column} <= ${high} and ${column} in (${valueList(ordered)})`;
}

/**
 * Deletes of the blobs the removed checkpoints referenced that no remaining checkpoint
 * references and no remaining incremental value extends. A put that lands after the
 * keys were read extends a value its parent names (deltas.ts), which is kept.
 */
function orphanBlobDeletes(
  dialect: Dialect,
  threadId: string,
  removed: StoredCheckpoint[],
  remaining: StoredCheckpoint[],
  blobs: BlobKey[],
): SQL[] {
  const b = dialect.columns.blobs;
  const keyOf = (ns: string, channel: string, version: string) => tupleKey([ns, channel, version]);
  const references = (rows: StoredCheckpoint[]) =>
    new Set(
      rows.flatMap((row) =>
        Object.entries(row.versions).map(([channel, version]) => keyOf(row.ns, channel, String(version))),
      ),
    );
  const kept = references(remaining);
  const chains = blobs.filter((blob) => blob.bases !== undefined);
  // What the removed checkpoints referenced, and the versions those values extend.
  const direct = references(removed);
  const referenced = new Set(direct);
  for (const blob of chains) {
    if (!direct.has(keyOf(blob.ns, blob.channel, blob.version))) continue;
    for (const version of blob.bases ?? []) referenced.add(keyOf(blob.ns, blob.channel, version));
  }
  const candidates = new Set([...referenced].filter((key) => !kept.has(key)));
  // A chain lists every version its value needs, so one pass over the survivors suffices.
  for (const blob of chains) {
    if (candidates.has(keyOf(blob.ns, blob.channel, blob.version))) continue;
    for (const version of blob.bases ?? []) candidates.delete(keyOf(blob.ns, blob.channel, version));
  }
  const orphans = blobs.filter((blob) => candidates.has(keyOf(blob.ns, blob.channel, blob.version)));
  const statements: SQL[] = [];
  for (const ns of new Set(orphans.map((blob) => blob.ns))) {
    for (const chunk of chunks(orphans.filter((blob) => blob.ns === ns))) {
      const [first, last] = [chunk[0], chunk[chunk.length - 1]];
      const byChannel = runsOf(chunk, (blob) => blob.channel).map(
        (run) =>
          sql`(${b.channel} = ${run[0].channel} and ${b.version} in (${valueList(run.map((blob) => blob.version))}))`,
      );
      // The range of the piece in the key's order, as for inOrderedList.
      statements.push(
        sql`delete from ${b.table} where ${b.threadId} = ${threadId} and ${b.nsKey} = ${dialect.nsKey(ns)}
          and (${b.channel}, ${b.version}) >= (${first.channel}, ${first.version})
          and (${b.channel}, ${b.version}) <= (${last.channel}, ${last.version})
          and (${sql.join(byChannel, sql` or `)})`,
      );
    }
  }
  return statements;
}

/** The items cut where `key` changes. */
function runsOf<T>(items: T[], key: (item: T) => string): T[][] {
  const runs: T[][] = [];
  for (const item of items) {
    const last = runs[runs.length - 1];
    if (last && key(last[0]) === key(item)) last.push(item);
    else runs.push([item]);
  }
  return runs;
}
