/**
 * A plain in-memory model of what a thread's checkpoints, parent links, pending writes,
 * channel values, pin flag and per-thread row should be after any sequence of put,
 * putWrites, prune, delete, copy, pin, expireThreads and sweep: what
 * lifecycle-model.test.ts compares the saver with. Times are the database's, as read
 * back after each put (a copy keeps its source's, as the saver does).
 */

export interface ModelWrite {
  taskId: string;
  channel: string;
  value: number;
}

export interface ModelCheckpoint {
  ns: string;
  id: string;
  parentId: string | null;
  /** Channel values the checkpoint holds: x is written by every put, y only now and then. */
  values: Record<string, number>;
  metadata: Record<string, unknown>;
  /** The database's time of the put, in milliseconds. */
  at: number;
  writes: ModelWrite[];
}

interface ModelThreadState {
  checkpoints: ModelCheckpoint[];
  pinned: boolean;
}

export type Strategy = "delete" | "keep_latest";

export class LifecycleModel {
  readonly threads = new Map<string, ModelThreadState>();

  has(threadId: string): boolean {
    return (this.threads.get(threadId)?.checkpoints.length ?? 0) > 0;
  }

  checkpoints(threadId: string): ModelCheckpoint[] {
    return this.threads.get(threadId)?.checkpoints ?? [];
  }

  /** The newest checkpoint of a namespace (greatest id), as getTuple without an id returns. */
  latest(threadId: string, ns: string): ModelCheckpoint | undefined {
    return this.checkpoints(threadId)
      .filter((row) => row.ns === ns)
      .reduce<ModelCheckpoint | undefined>(
        (best, row) => (best === undefined || row.id > best.id ? row : best),
        undefined,
      );
  }

  put(threadId: string, row: Omit<ModelCheckpoint, "writes">): void {
    const state = this.threads.get(threadId) ?? { checkpoints: [], pinned: false };
    state.checkpoints.push({ ...row, writes: [] });
    this.threads.set(threadId, state);
  }

  putWrites(threadId: string, ns: string, id: string, writes: ModelWrite[]): void {
    const row = this.checkpoints(threadId).find((r) => r.ns === ns && r.id === id);
    if (!row) throw new Error(`model: no checkpoint ${threadId}/${ns}/${id}`);
    row.writes.push(...writes);
  }

  delete(threadId: string): void {
    this.threads.delete(threadId);
  }

  copy(source: string, target: string): void {
    const rows = this.checkpoints(source).map((row) => ({ ...row, writes: row.writes.map((w) => ({ ...w })) }));
    this.threads.set(target, { checkpoints: rows, pinned: false });
  }

  setPinned(threadId: string, pinned: boolean): void {
    const state = this.threads.get(threadId);
    if (state) state.pinned = pinned;
  }

  isPinned(threadId: string): boolean {
    return this.threads.get(threadId)?.pinned ?? false;
  }

  /**
   * Keeps the newest `keepLast` of each namespace; a kept checkpoint whose parent goes is
   * linked to its nearest kept ancestor. Returns whether anything was removed.
   */
  prune(threadId: string, keepLast: number): boolean {
    const state = this.threads.get(threadId);
    if (!state) return false;
    const byId = new Map(state.checkpoints.map((row) => [`${row.ns}\u0000${row.id}`, row]));
    const kept = new Set<ModelCheckpoint>();
    for (const ns of new Set(state.checkpoints.map((row) => row.ns))) {
      const newest = state.checkpoints
        .filter((row) => row.ns === ns)
        .sort((a, b) => (a.id < b.id ? 1 : -1))
        .slice(0, keepLast);
      for (const row of newest) kept.add(row);
    }
    if (kept.size === state.checkpoints.length) return false;
    for (const row of kept) {
      let parent = row.parentId;
      while (parent !== null) {
        const found = byId.get(`${row.ns}\u0000${parent}`);
        if (found === undefined || kept.has(found)) break;
        parent = found.parentId;
      }
      row.parentId = parent;
    }
    state.checkpoints = state.checkpoints.filter((row) => kept.has(row));
    return true;
  }

  /** When the thread's newest checkpoint (any namespace) was written; undefined for no thread. */
  updatedAt(threadId: string): number | undefined {
    const rows = this.checkpoints(threadId);
    return rows.length === 0 ? undefined : Math.max(...rows.map((row) => row.at));
  }

  createdAt(threadId: string): number | undefined {
    const rows = this.checkpoints(threadId);
    return rows.length === 0 ? undefined : Math.min(...rows.map((row) => row.at));
  }

  /** Unpinned threads whose newest checkpoint is strictly before `cutoff`. */
  idle(cutoff: number): string[] {
    return [...this.threads.keys()].filter(
      (threadId) => this.has(threadId) && !this.isPinned(threadId) && (this.updatedAt(threadId) as number) < cutoff,
    );
  }

  /** What a retention pass does to each idle thread; returns each one's outcome. */
  retain(threadIds: string[], strategy: Strategy, keepLast: number): Map<string, "deleted" | "pruned" | "unchanged"> {
    const outcomes = new Map<string, "deleted" | "pruned" | "unchanged">();
    for (const threadId of threadIds) {
      if (strategy === "delete") {
        this.delete(threadId);
        outcomes.set(threadId, "deleted");
      } else {
        outcomes.set(threadId, this.prune(threadId, keepLast) ? "pruned" : "unchanged");
      }
    }
    return outcomes;
  }
}
