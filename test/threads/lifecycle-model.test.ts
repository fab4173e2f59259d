import type { Checkpoint, CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../../src/index.js";
import { DIALECTS } from "../helpers/databases.js";
import { CLEAN, integrity, useFreshSaver } from "../lifecycle/support.js";
import { LifecycleModel, type ModelCheckpoint, type Strategy } from "./lifecycle-model.js";

/**
 * Random sequences of put, putWrites, prune, delete, copy, pin, expireThreads and sweep on
 * every dialect, compared after each step with a plain model (lifecycle-model.ts): what
 * getTuple, list, searchThreads, countThreads and listThreads return, and that no row is
 * left orphaned. Subgraph namespaces, forks, values carried over from pruned checkpoints,
 * pending writes, pinned threads, cut-offs at a thread's exact time and thread ids with
 * odd characters included. LIFECYCLE_PROPERTY_RUNS makes it heavier.
 */
const NUM_RUNS = Number(process.env.LIFECYCLE_PROPERTY_RUNS ?? 8);
const THREADS = 3;
/** Thread ids as an application might pick them: quotes, wildcards, slashes, non-ASCII. */
const ODD = ["plain", 'o\'brien "q"', "50%_off\\x", "ü/🙂 ns:|"];
const NAMESPACES = ["", "child:1", "weird 'ns'|ü"];

type Op =
  | { kind: "put"; thread: number; ns: number; fork: number | null; newY: boolean; user: boolean }
  | { kind: "writes"; thread: number; pick: number; count: number }
  | { kind: "prune"; thread: number; keepLast: number }
  | { kind: "delete"; thread: number; viaPrune: boolean }
  | { kind: "copy"; from: number; to: number }
  | { kind: "pin"; thread: number; pinned: boolean }
  | { kind: "expire"; thread: number; delta: number; strategy: Strategy; dryRun: boolean }
  | { kind: "sweep"; strategy: Strategy; keepLast: number; dryRun: boolean };

const thread = fc.nat(THREADS - 1);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record({
      kind: fc.constant("put" as const),
      thread,
      ns: fc.nat(NAMESPACES.length - 1),
      fork: fc.option(fc.nat(5), { nil: null }),
      newY: fc.boolean(),
      user: fc.boolean(),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("writes" as const),
      thread,
      pick: fc.nat(9),
      count: fc.integer({ min: 1, max: 2 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("prune" as const), thread, keepLast: fc.integer({ min: 1, max: 3 }) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("delete" as const), thread, viaPrune: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("copy" as const), from: thread, to: thread }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("pin" as const), thread, pinned: fc.boolean() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("expire" as const),
      thread,
      delta: fc.constantFrom(-1, 0, 1),
      strategy: fc.constantFrom<Strategy>("delete", "keep_latest"),
      dryRun: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("sweep" as const),
      strategy: fc.constantFrom<Strategy>("delete", "keep_latest"),
      keepLast: fc.integer({ min: 1, max: 2 }),
      dryRun: fc.boolean(),
    }),
  },
);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const sorted = <T>(items: T[], key: (item: T) => string) => [...items].sort((a, b) => (key(a) < key(b) ? -1 : 1));

describe.each(DIALECTS)("thread lifecycle against a model on %s", (dialect) => {
  const db = useFreshSaver(dialect);
  const model = new LifecycleModel();
  let runs = 0;
  let counter = 0;

  async function put(threadId: string, op: Extract<Op, { kind: "put" }>): Promise<void> {
    const { saver } = db;
    const ns = NAMESPACES[op.ns];
    const inNs = model.checkpoints(threadId).filter((row) => row.ns === ns);
    const parent =
      inNs.length === 0 ? undefined : op.fork === null ? model.latest(threadId, ns) : inNs[op.fork % inNs.length];
    const x = ++counter;
    const values: Record<string, number> = { x };
    const versions: Record<string, string | number> = {};
    const newVersions: Record<string, string | number> = {};
    const parentTuple = parent
      ? await saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: parent.id } })
      : undefined;
    const before = parentTuple?.checkpoint.channel_versions ?? {};
    versions.x = newVersions.x = saver.getNextVersion(before.x as never);
    if (op.newY || before.y === undefined) {
      values.y = x;
      versions.y = newVersions.y = saver.getNextVersion(before.y as never);
    } else {
      values.y = parent?.values.y as number;
      versions.y = before.y;
    }
    const checkpoint: Checkpoint = {
      ...emptyCheckpoint(),
      id: uuid6(-1),
      channel_values: values,
      channel_versions: versions,
    };
    const metadata = { source: "loop", step: x, parents: {}, ...(op.user ? { user_id: "u1" } : {}) };
    await saver.put(
      { configurable: { thread_id: threadId, checkpoint_ns: ns, ...(parent ? { checkpoint_id: parent.id } : {}) } },
      checkpoint,
      metadata as CheckpointMetadata,
      newVersions,
    );
    // The database's time of this put: the thread's updatedAt, now the newest of all.
    const [newest] = await saver.searchThreads({ sortBy: "updatedAt", order: "desc", limit: 1 });
    expect(newest.threadId).toBe(threadId);
    model.put(threadId, {
      ns,
      id: checkpoint.id,
      parentId: parent?.id ?? null,
      values,
      metadata,
      at: newest.updatedAt.getTime(),
    });
    await sleep(3);
  }

  async function apply(op: Op, ids: string[]): Promise<void> {
    const { saver } = db;
    switch (op.kind) {
      case "put":
        return put(ids[op.thread], op);
      case "writes": {
        const rows = model.checkpoints(ids[op.thread]);
        if (rows.length === 0) return;
        const row = rows[op.pick % rows.length];
        const taskId = `task-${++counter}`;
        const writes = Array.from({ length: op.count }, (_, i) => ({
          taskId,
          channel: `w${i}`,
          value: counter * 10 + i,
        }));
        await saver.putWrites(
          { configurable: { thread_id: ids[op.thread], checkpoint_ns: row.ns, checkpoint_id: row.id } },
          writes.map((w) => [w.channel, w.value]),
          taskId,
        );
        model.putWrites(ids[op.thread], row.ns, row.id, writes);
        return;
      }
      case "prune":
        await saver.prune([ids[op.thread]], { strategy: "keep_latest", keepLast: op.keepLast });
        model.prune(ids[op.thread], op.keepLast);
        return;
      case "delete":
        if (op.viaPrune) await saver.prune([ids[op.thread]], { strategy: "delete" });
        else await saver.deleteThread(ids[op.thread]);
        model.delete(ids[op.thread]);
        return;
      case "copy": {
        const [from, to] = [ids[op.from], ids[op.to]];
        if (from === to) {
          await expect(saver.copyThread(from, to)).rejects.toThrow(InvalidInputError);
          return;
        }
        if (model.has(to)) {
          await expect(saver.copyThread(from, to)).rejects.toThrow(InvalidInputError);
          return;
        }
        if (!model.has(from)) {
          await expect(saver.copyThread(from, to)).rejects.toThrow(InvalidInputError);
          return;
        }
        await saver.copyThread(from, to);
        model.copy(from, to);
        return;
      }
      case "pin": {
        const call = op.pinned ? saver.pinThread(ids[op.thread]) : saver.unpinThread(ids[op.thread]);
        if (!model.has(ids[op.thread])) return expect(call).rejects.toThrow(InvalidInputError);
        await call;
        model.setPinned(ids[op.thread], op.pinned);
        return;
      }
      case "expire": {
        const at = model.updatedAt(ids[op.thread]);
        if (at === undefined) return;
        const cutoff = at + op.delta;
        const idle = model.idle(cutoff);
        const seen: string[] = [];
        const n = await saver.expireThreads({
          idleSince: new Date(cutoff),
          strategy: op.strategy,
          dryRun: op.dryRun,
          ...(op.dryRun ? { onThread: (threadId: string) => seen.push(threadId) } : {}),
          batchSize: 2,
        });
        expect(n, `expireThreads(${cutoff}) count`).toBe(idle.length);
        if (op.dryRun) expect(seen.sort()).toEqual([...idle].sort());
        else model.retain(idle, op.strategy, 1);
        return;
      }
      case "sweep": {
        await sleep(5);
        const idle = model.idle(Number.POSITIVE_INFINITY);
        const outcomes = new Map<string, string>();
        const result = await saver.sweep({
          idleFor: 1,
          strategy: op.strategy,
          ...(op.strategy === "keep_latest" ? { keepLast: op.keepLast } : {}),
          dryRun: op.dryRun,
          batchSize: 2,
          onThread: (threadId, outcome) => outcomes.set(threadId, outcome),
        });
        expect(result.scanned).toBe(idle.length);
        expect(result.skipped).toBe(0);
        if (op.dryRun) {
          const aim = op.strategy === "delete" ? "deleted" : "pruned";
          expect(Object.fromEntries(outcomes)).toEqual(Object.fromEntries(idle.map((id) => [id, aim])));
          return;
        }
        const want = model.retain(idle, op.strategy, op.keepLast);
        expect(Object.fromEntries(outcomes)).toEqual(Object.fromEntries(want));
        return;
      }
    }
  }

  async function expectThread(threadId: string, label: string): Promise<void> {
    const { saver } = db;
    const want = model.checkpoints(threadId);
    const listed = [];
    for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) listed.push(tuple);
    const key = (ns: string, id: string) => `${ns}\u0000${id}`;
    expect(
      sorted(
        listed.map((t) => key(t.config.configurable?.checkpoint_ns, t.checkpoint.id)),
        (k) => k,
      ),
      `${label}: list of ${threadId}`,
    ).toEqual(
      sorted(
        want.map((r) => key(r.ns, r.id)),
        (k) => k,
      ),
    );
    for (const row of want) await expectTuple(threadId, row, `${label}: ${threadId} ${row.ns}/${row.id}`);
    for (const ns of NAMESPACES) {
      const latest = await saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: ns } });
      expect(latest?.checkpoint.id, `${label}: latest of ${threadId} in "${ns}"`).toBe(model.latest(threadId, ns)?.id);
    }
  }

  async function expectTuple(threadId: string, row: ModelCheckpoint, label: string): Promise<void> {
    const tuple = await db.saver.getTuple({
      configurable: { thread_id: threadId, checkpoint_ns: row.ns, checkpoint_id: row.id },
    });
    expect(tuple, label).toBeDefined();
    expect(tuple?.checkpoint.channel_values, `${label}: values`).toEqual(row.values);
    expect(tuple?.parentConfig?.configurable?.checkpoint_id ?? null, `${label}: parent`).toBe(row.parentId);
    const writes = (tuple?.pendingWrites ?? []).map(([taskId, channel, value]) => ({ taskId, channel, value }));
    const k = (w: { taskId: string; channel: string }) => `${w.taskId}/${w.channel}`;
    expect(sorted(writes, k), `${label}: pending writes`).toEqual(sorted(row.writes, k));
  }

  async function expectThreads(label: string): Promise<void> {
    const { saver } = db;
    const all = await saver.searchThreads({ limit: 10_000, sortBy: "threadId", order: "asc" });
    const wantIds = [...model.threads.keys()].filter((id) => model.has(id)).sort();
    expect(all.map((t) => t.threadId).sort(), `${label}: searchThreads`).toEqual(wantIds);
    for (const info of all) {
      const root = model.checkpoints(info.threadId).filter((r) => r.ns === "");
      expect(info.checkpoints, `${label}: root checkpoints of ${info.threadId}`).toBe(root.length);
      expect(info.latestCheckpointId).toBe(model.latest(info.threadId, "")?.id ?? null);
      expect(info.updatedAt.getTime(), `${label}: updatedAt of ${info.threadId}`).toBe(model.updatedAt(info.threadId));
      expect(info.createdAt.getTime(), `${label}: createdAt of ${info.threadId}`).toBe(model.createdAt(info.threadId));
    }
    expect(await saver.countThreads()).toBe(wantIds.length);
    const users = wantIds.filter((id) => model.latest(id, "")?.metadata.user_id === "u1");
    expect(await saver.countThreads({ filter: { user_id: "u1" } }), `${label}: count u1`).toBe(users.length);
    for await (const summary of saver.listThreads()) {
      expect(summary.pinned, `${label}: pinned of ${summary.threadId}`).toBe(model.isPinned(summary.threadId));
    }
    expect(await integrity(db.raw), label).toEqual(CLEAN);
  }

  it("matches the model after every step (property)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 14 }), fc.nat(ODD.length - 1), async (ops, odd) => {
        const run = String(++runs).padStart(3, "0");
        const ids = Array.from({ length: THREADS }, (_, i) => `${ODD[(odd + i) % ODD.length]}#${run}.${i}`);
        for (const [step, op] of ops.entries()) {
          const label = `run ${run} step ${step} ${JSON.stringify(op)}`;
          await apply(op, ids);
          for (const id of ids) await expectThread(id, label);
          await expectThreads(label);
        }
      }),
      { numRuns: NUM_RUNS, interruptAfterTimeLimit: 200_000, markInterruptAsFailure: true },
    );
  }, 300_000);
});
