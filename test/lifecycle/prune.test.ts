import { Command } from "@langchain/langgraph";
import { uuid6 } from "@langchain/langgraph-checkpoint";
import { InvalidInputError, type PruneStrategy } from "../../src/index.js";
import {
  buildPipelineGraph,
  buildTripGraph,
  history,
  type NormalSnapshot,
  normalize,
  normalSnapshot,
} from "../graphs/graphs.js";
import { DIALECTS } from "../helpers/databases.js";
import {
  CLEAN,
  dumpTables,
  EMPTY,
  HistoryWriter,
  integrity,
  newestPerNamespace,
  newThreadId,
  storedCheckpoints,
  storedThreads,
  type TupleView,
  threadConfig,
  threadView,
  useFreshSaver,
} from "./support.js";

/** A snapshot as it reads once its parents are gone: the same, without a parent. */
function orphaned(snapshot: NormalSnapshot): NormalSnapshot {
  return {
    ...snapshot,
    hasParent: false,
    tasks: snapshot.tasks.map((task) => (task.subgraph ? { ...task, subgraph: orphaned(task.subgraph) } : task)),
  };
}

/** The newest tuple of each namespace, as it must read after keep_latest: unchanged but with no parent. */
function keptAfterPrune(before: TupleView[]): TupleView[] {
  const newest = newestPerNamespace(before);
  return before.filter((tuple) => newest.get(tuple.ns) === tuple.id).map((tuple) => ({ ...tuple, parent: null }));
}

describe.each(DIALECTS)("prune on %s", (dialect) => {
  const db = useFreshSaver(dialect);

  it("keep_latest keeps the newest checkpoint of each namespace of a paused graph, which resumes like an unpruned thread", async () => {
    const graph = buildTripGraph(db.saver, { confirm: 0 });
    const thread = newThreadId("prune-trip");
    const twin = newThreadId("prune-trip-twin");
    await graph.invoke({ destination: "Bergen" }, threadConfig(thread));
    await graph.invoke({ destination: "Bergen" }, threadConfig(twin));
    const before = await threadView(db.saver, thread);
    const paused = normalSnapshot(await graph.getState(threadConfig(thread), { subgraphs: true }));
    const namespaces = new Set(before.map((tuple) => tuple.ns));
    expect(namespaces.size).toBe(2);
    const twinRows = await dumpTables(db.raw, [twin]);

    await db.saver.prune([thread]);

    const stored = await storedCheckpoints(db.raw, thread);
    const newest = newestPerNamespace(before);
    expect(stored).toEqual([...newest].sort().map(([ns, id]) => ({ ns, id, parent: null })));
    expect(await threadView(db.saver, thread)).toEqual(keptAfterPrune(before));
    expect(await integrity(db.raw, [thread])).toEqual(CLEAN);
    expect(await dumpTables(db.raw, [twin])).toEqual(twinRows);
    // The paused state (with the subgraph's, and the interrupt) reads the same.
    expect(normalSnapshot(await graph.getState(threadConfig(thread), { subgraphs: true }))).toEqual(orphaned(paused));
    expect(await history(graph, threadConfig(thread))).toHaveLength(1);

    const resumed = await graph.invoke(new Command({ resume: "3F" }), threadConfig(thread));
    const twinResumed = await graph.invoke(new Command({ resume: "3F" }), threadConfig(twin));
    expect(normalize(resumed)).toEqual(normalize(twinResumed));
    expect(normalize(resumed)).toEqual({
      destination: "Bergen",
      steps: ["plan Bergen", "done: quote for Bergen; seat 3F confirmed; ticket #2 issued"],
      booking: ["quote for Bergen", "seat 3F confirmed", "ticket #2 issued"],
    });
    expect(normalSnapshot(await graph.getState(threadConfig(thread)))).toMatchObject({
      values: normalize(twinResumed),
      next: [],
    });
    expect(await integrity(db.raw, [thread, twin])).toEqual(CLEAN);
  });

  it("keep_latest on a branched history (time travel) keeps the newest fork's tip, which continues like before", async () => {
    const graph = buildPipelineGraph(db.saver);
    const thread = newThreadId("prune-fork");
    const twin = newThreadId("prune-fork-twin");
    for (const id of [thread, twin]) {
      await graph.invoke({ seed: 3 }, threadConfig(id));
      const afterOne = (await history(graph, threadConfig(id))).find((s) => s.next[0] === "two");
      if (!afterOne) throw new Error("no checkpoint waiting for two");
      await graph.invoke(null, await graph.updateState(afterOne.config, { total: 50, trail: ["fork"] }));
      // A second fork from the same old checkpoint, stopped half way (its tip is the newest checkpoint).
      const again = await graph.updateState(afterOne.config, { total: 7, trail: ["fork again"] });
      await graph.invoke(null, { ...again, interruptBefore: ["three"] });
    }
    const before = await threadView(db.saver, thread);
    const latest = await graph.getState(threadConfig(thread));
    expect(latest.next).toEqual(["three"]);

    await db.saver.prune([thread], { strategy: "keep_latest" });

    expect(await threadView(db.saver, thread)).toEqual(keptAfterPrune(before));
    const kept = await storedCheckpoints(db.raw, thread);
    expect(kept).toEqual([{ ns: "", id: latest.config.configurable?.checkpoint_id, parent: null }]);
    expect(await integrity(db.raw, [thread])).toEqual(CLEAN);
    expect(normalSnapshot(await graph.getState(threadConfig(thread)))).toEqual(orphaned(normalSnapshot(latest)));

    // Continuing the half-done fork gives what the unpruned twin gives.
    const result = await graph.invoke(null, threadConfig(thread));
    expect(result).toEqual(await graph.invoke(null, threadConfig(twin)));
    expect(result).toEqual({
      seed: 3,
      trail: ["one:3", "fork again", "two:7", "three:14", "four:114"],
      total: 113,
      note: "started at 3, ended at 113",
    });
    expect(await integrity(db.raw, [thread, twin])).toEqual(CLEAN);
  });

  it("keep_latest on direct puts: every namespace keeps its newest checkpoint, its pending writes and the blobs it inherited", async () => {
    const thread = newThreadId("prune-ns");
    const other = newThreadId("prune-ns-other");
    const bystander = newThreadId("prune-ns-bystander");
    const child = `child:${uuid6(-1)}`;
    const grandchild = `${child}|grand:${uuid6(-1)}`;
    const writer = new HistoryWriter(db.saver, thread);
    // "big" is written once by the root; the newest checkpoint still references that blob.
    const root = await writer.put({ values: { big: "b".repeat(5000), topic: "t0" }, runId: "r" });
    const c1 = await writer.put({ parent: root, values: { topic: "t1", scratch: "s1" } });
    const c2 = await writer.put({
      parent: c1,
      values: { topic: "t2", scratch: EMPTY },
      writes: [{ taskId: "task-old", writes: [["log", "old"]] }],
    });
    // A fork from c1 written last: the newest checkpoint, whose parent is not the previous newest.
    const tip = await writer.put({
      parent: c1,
      values: { topic: "fork" },
      writes: [
        { taskId: "task-z", taskPath: "~1", writes: [["log", "z"]] },
        { taskId: "task-a", taskPath: "~2", writes: [["log", "a"]] },
      ],
    });
    const s0 = await writer.put({ ns: child, values: { inner: [1] } });
    const s1 = await writer.put({ ns: child, parent: s0, values: { inner: [1, 2] } });
    await writer.put({
      ns: child,
      parent: s1,
      values: { inner: [1, 2, 3] },
      writes: [{ taskId: "t", writes: [["x", 1]] }],
    });
    await writer.put({ ns: grandchild, values: { deep: true } });
    const otherWriter = new HistoryWriter(db.saver, other);
    await otherWriter.chain(3);
    await new HistoryWriter(db.saver, bystander).chain(3);
    const before = await threadView(db.saver, thread);
    const otherBefore = await threadView(db.saver, other);
    const bystanderRows = await dumpTables(db.raw, [bystander]);
    expect(await integrity(db.raw, [thread, other])).toEqual(CLEAN);

    await db.saver.prune([thread, other]);

    const after = await threadView(db.saver, thread);
    expect(after).toEqual(keptAfterPrune(before));
    expect(after.map((tuple) => tuple.ns).sort()).toEqual(["", child, grandchild].sort());
    const rootKept = after.find((tuple) => tuple.ns === "");
    expect(rootKept?.id).toBe(tip);
    expect(rootKept?.checkpoint.channel_values).toEqual({ big: "b".repeat(5000), topic: "fork", scratch: "s1" });
    expect(rootKept?.pendingWrites).toEqual([
      ["task-z", "log", "z"],
      ["task-a", "log", "a"],
    ]);
    expect(await threadView(db.saver, other)).toEqual(keptAfterPrune(otherBefore));
    // Blobs are exactly those the kept checkpoints reference; writes only the kept ones'.
    expect(await integrity(db.raw, [thread, other])).toEqual(CLEAN);
    const rows = await dumpTables(db.raw, [thread]);
    expect(rows.checkpoint_writes.map((row) => row.checkpoint_id).sort()).toEqual(
      [tip, tip, after.find((tuple) => tuple.ns === child)?.id].sort(),
    );
    expect(rows.checkpoint_writes.some((row) => row.checkpoint_id === c2)).toBe(false);
    const referenced = after.reduce((n, tuple) => n + Object.keys(tuple.checkpoint.channel_versions).length, 0);
    // Plus one: the child's [1, 2, 3] is stored as the elements appended to [1] (the
    // third value of its lineage extends the first, see src/savers/values/deltas.ts), which stays.
    expect(rows.checkpoint_blobs).toHaveLength(referenced + 1);
    expect(await dumpTables(db.raw, [bystander])).toEqual(bystanderRows);
  });

  it('strategy "delete" removes the threads entirely and nothing else', async () => {
    const doomed = [newThreadId("prune-delete-a"), newThreadId("prune-delete-b")];
    const bystander = newThreadId("prune-delete-bystander");
    for (const id of doomed) {
      const writer = new HistoryWriter(db.saver, id);
      const chain = await writer.chain(3);
      await writer.put({ parent: chain[0], values: { fork: 1 } });
      await writer.chain(2, { ns: `child:${uuid6(-1)}` });
    }
    await new HistoryWriter(db.saver, bystander).chain(2);
    const bystanderRows = await dumpTables(db.raw, [bystander]);

    await db.saver.prune(doomed, { strategy: "delete" });

    const stored = await storedThreads(db.raw);
    for (const id of doomed) expect(stored).not.toContain(id);
    expect(await dumpTables(db.raw, [bystander])).toEqual(bystanderRows);
    for (const id of doomed) expect(await db.saver.getTuple(threadConfig(id))).toBeUndefined();
  });

  it("unknown or empty threads, an empty list and already minimal threads are left as they are", async () => {
    const minimal = newThreadId("prune-minimal");
    const writer = new HistoryWriter(db.saver, minimal);
    await writer.put({ values: { only: 1 }, writes: [{ taskId: "t", writes: [["only", 2]] }] });
    await writer.put({ ns: `child:${uuid6(-1)}`, values: { only: 3 } });
    const everything = await dumpTables(db.raw);

    await db.saver.prune([]);
    await db.saver.prune([newThreadId("prune-unknown")]);
    await db.saver.prune([newThreadId("prune-unknown")], { strategy: "delete" });
    await db.saver.prune([minimal]);

    expect(await dumpTables(db.raw)).toEqual(everything);
    await expect(db.saver.prune([minimal], { strategy: "bogus" as string as PruneStrategy })).rejects.toThrow(
      InvalidInputError,
    );
    expect(await dumpTables(db.raw)).toEqual(everything);
  });

  it("a second prune changes nothing", async () => {
    const thread = newThreadId("prune-twice");
    const writer = new HistoryWriter(db.saver, thread);
    const chain = await writer.chain(5);
    await writer.put({ parent: chain[2], values: { step: "fork" }, writes: [{ taskId: "f", writes: [["step", 1]] }] });
    await writer.chain(3, { ns: `child:${uuid6(-1)}` });

    await db.saver.prune([thread]);
    const once = await dumpTables(db.raw);
    const view = await threadView(db.saver, thread);
    await db.saver.prune([thread]);
    await db.saver.prune([thread], { strategy: "keep_latest" });
    expect(await dumpTables(db.raw)).toEqual(once);
    expect(await threadView(db.saver, thread)).toEqual(view);
    expect(await integrity(db.raw, [thread])).toEqual(CLEAN);

    await db.saver.prune([thread], { strategy: "delete" });
    const deleted = await dumpTables(db.raw);
    await db.saver.prune([thread], { strategy: "delete" });
    expect(await dumpTables(db.raw)).toEqual(deleted);
    expect(await storedThreads(db.raw)).not.toContain(thread);
  });
});
