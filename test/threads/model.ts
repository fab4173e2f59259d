import { type Filter, type JsonObject, matchesFilter } from "../filters/reference.js";

/**
 * What the per-thread table should say, computed from what a test wrote: every
 * checkpoint it stored, removed or copied, in plain TypeScript. Times are put
 * sequence numbers (`seq`): the test spaces its puts so that database times order
 * the same way, and a copy keeps its source's times as the saver does.
 */

export interface ModelCheckpoint {
  ns: string;
  id: string;
  metadata: JsonObject;
  seq: number;
}

export interface ModelThread {
  threadId: string;
  createdSeq: number;
  updatedSeq: number;
  checkpoints: number;
  latestCheckpointId: string | null;
  metadata: JsonObject | null;
}

export interface ModelQuery {
  filter?: Filter;
  sortBy?: "updatedAt" | "createdAt" | "threadId";
  order?: "asc" | "desc";
  limit?: number;
  offset?: number;
}

const compare = (a: string | number, b: string | number) => (a < b ? -1 : a > b ? 1 : 0);

export class ThreadModel {
  private readonly threads = new Map<string, ModelCheckpoint[]>();
  private seq = 0;

  put(threadId: string, ns: string, id: string, metadata: JsonObject): void {
    const rows = this.threads.get(threadId) ?? [];
    rows.push({ ns, id, metadata, seq: ++this.seq });
    this.threads.set(threadId, rows);
  }

  has(threadId: string): boolean {
    return (this.threads.get(threadId)?.length ?? 0) > 0;
  }

  delete(threadId: string): void {
    this.threads.delete(threadId);
  }

  copy(source: string, target: string): void {
    this.threads.set(
      target,
      (this.threads.get(source) ?? []).map((row) => ({ ...row })),
    );
  }

  /** prune keep_latest: the newest checkpoint (greatest id) of each namespace stays. */
  prune(threadId: string): void {
    const rows = this.threads.get(threadId) ?? [];
    const newest = new Map<string, string>();
    for (const row of rows) if (row.id > (newest.get(row.ns) ?? "")) newest.set(row.ns, row.id);
    this.threads.set(
      threadId,
      rows.filter((row) => newest.get(row.ns) === row.id),
    );
  }

  deleteForRuns(runIds: string[]): void {
    for (const [threadId, rows] of this.threads) {
      const kept = rows.filter(
        (row) => !(typeof row.metadata.run_id === "string" && runIds.includes(row.metadata.run_id)),
      );
      if (kept.length === 0) this.threads.delete(threadId);
      else this.threads.set(threadId, kept);
    }
  }

  info(threadId: string): ModelThread {
    const rows = this.threads.get(threadId) ?? [];
    const root = rows.filter((row) => row.ns === "");
    const latest = root.reduce<ModelCheckpoint | null>(
      (best, row) => (best === null || row.id > best.id ? row : best),
      null,
    );
    return {
      threadId,
      createdSeq: Math.min(...rows.map((row) => row.seq)),
      updatedSeq: Math.max(...rows.map((row) => row.seq)),
      checkpoints: root.length,
      latestCheckpointId: latest?.id ?? null,
      metadata: latest?.metadata ?? null,
    };
  }

  /** Threads matching the filter: all without a constrained key, else those whose newest root metadata matches. */
  matching(filter: Filter = {}): ModelThread[] {
    const constrained = Object.values(filter).some((value) => value !== undefined);
    return [...this.threads.keys()]
      .filter((threadId) => this.has(threadId))
      .map((threadId) => this.info(threadId))
      .filter((thread) => !constrained || (thread.metadata !== null && matchesFilter(thread.metadata, filter)));
  }

  search(query: ModelQuery): ModelThread[] {
    const { sortBy = "updatedAt", order = "desc", limit = 10, offset = 0 } = query;
    const key = (t: ModelThread) =>
      sortBy === "threadId" ? t.threadId : sortBy === "createdAt" ? t.createdSeq : t.updatedSeq;
    const sign = order === "asc" ? 1 : -1;
    const sorted = this.matching(query.filter).sort(
      (a, b) => sign * (compare(key(a), key(b)) || compare(a.threadId, b.threadId)),
    );
    return sorted.slice(offset, offset + limit);
  }
}
