import type { RunnableConfig } from "@langchain/core/runnables";
import { Command } from "@langchain/langgraph";
import { type ChannelVersions, type Checkpoint, type CheckpointMetadata, uuid6 } from "@langchain/langgraph-checkpoint";
import { DrizzleSaver, InvalidInputError, type SupportedDatabase } from "../../src/index.js";
import { buildPipelineGraph, buildTripGraph, history, normalize, normalSnapshot } from "../graphs/graphs.js";
import { DIALECTS } from "../helpers/databases.js";
import {
  CLEAN,
  dumpTables,
  EMPTY,
  HistoryWriter,
  integrity,
  newThreadId,
  type OwnDrizzle,
  openDrizzle,
  runIdOf,
  storedCheckpoints,
  storedThreads,
  type TupleView,
  threadConfig,
  threadView,
  useFreshSaver,
} from "./support.js";

/**
 * Tags every checkpoint with the current run's id, as LangGraph Platform does
 * (LangGraph.js itself does not copy run ids into checkpoint metadata).
 */
class RunTaggingSaver extends DrizzleSaver {
  run = "";

  constructor(db: SupportedDatabase) {
    super(db);
  }

  override async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    return super.put(config, checkpoint, { ...metadata, run_id: this.run } as CheckpointMetadata, newVersions);
  }
}

/** `before` without the removed checkpoints, with the given parents re-linked. */
function expectedAfter(before: TupleView[], removed: string[], relinked: Record<string, string | null>): TupleView[] {
  return before
    .filter((tuple) => !removed.includes(tuple.id))
    .map((tuple) => (tuple.id in relinked ? { ...tuple, parent: relinked[tuple.id] } : tuple));
}

describe.each(DIALECTS)("deleteForRuns on %s", (dialect) => {
  const db = useFreshSaver(dialect);
  let own: OwnDrizzle;
  let tagging: RunTaggingSaver;
  beforeAll(() => {
    own = openDrizzle(dialect, db.url);
    tagging = new RunTaggingSaver(own.db);
  });
  afterAll(async () => {
    await own?.close();
  });

  it("removes a run's checkpoints with their writes and unreferenced blobs, re-linking children to the nearest remaining ancestor", async () => {
    const thread = newThreadId("runs");
    const w = new HistoryWriter(db.saver, thread);
    const c1 = await w.put({ runId: "r1", values: { topic: "a", big: "B".repeat(3000) } });
    const c2 = await w.put({
      runId: "r1",
      parent: c1,
      values: { topic: "b" },
      writes: [{ taskId: "t2", writes: [["log", 2]] }],
    });
    const c3 = await w.put({
      runId: "r2",
      parent: c2,
      values: { tmp: "only in c3" },
      writes: [{ taskId: "t3", writes: [["log", 3]] }],
    });
    // c4 writes a topic version that c5 and c6 inherit: that blob must stay.
    const c4 = await w.put({ runId: "r2", parent: c3, values: { topic: "d", tmp: EMPTY } });
    const c5 = await w.put({
      runId: "r3",
      parent: c4,
      values: { count: 5 },
      writes: [{ taskId: "t5", writes: [["log", 5]] }],
    });
    const c6 = await w.put({ runId: "r1", parent: c5, values: { count: 6 } });
    // A branch from c2 (time travel), with a checkpoint of r2 inside it.
    const c7 = await w.put({ runId: "r4", parent: c2, values: { topic: "fork" } });
    const c8 = await w.put({
      runId: "r2",
      parent: c7,
      values: { count: 8 },
      writes: [{ taskId: "t8", writes: [["log", 8]] }],
    });
    const c9 = await w.put({ runId: "r4", parent: c8, values: { count: 9 } });
    // r2 in another thread too; and a thread where "r2" is not the top-level run_id.
    const other = newThreadId("runs-other");
    await new HistoryWriter(db.saver, other).chain(3, { runId: "r2" });
    const nested = newThreadId("runs-nested");
    await new HistoryWriter(db.saver, nested).put({
      values: { a: 1 },
      metadata: { info: { run_id: "r2" }, runs: ["r2"] },
    });
    const before = await threadView(db.saver, thread);
    const nestedRows = await dumpTables(db.raw, [nested]);
    expect(await integrity(db.raw, [thread, other, nested])).toEqual(CLEAN);

    await db.saver.deleteForRuns(["r2"]);

    expect(await threadView(db.saver, thread)).toEqual(expectedAfter(before, [c3, c4, c8], { [c5]: c2, [c9]: c7 }));
    expect((await storedCheckpoints(db.raw, thread)).map((c) => c.id)).toEqual([c1, c2, c5, c6, c7, c9].sort());
    // c5 still reads the topic c4 wrote, and its own write.
    const t5 = await db.saver.getTuple(w.config(c5));
    expect(t5?.checkpoint.channel_values).toEqual({ topic: "d", big: "B".repeat(3000), count: 5 });
    expect(t5?.pendingWrites).toEqual([["t5", "log", 5]]);
    expect(t5?.parentConfig?.configurable?.checkpoint_id).toBe(c2);
    const rows = await dumpTables(db.raw, [thread]);
    expect(rows.checkpoint_writes.map((row) => row.checkpoint_id).sort()).toEqual([c2, c5].sort());
    // c3's value of tmp is gone; c4's cleared version of it is what c5 still references.
    expect(rows.checkpoint_blobs.filter((row) => row.channel === "tmp").map((row) => row.type)).toEqual(["empty"]);
    expect(await integrity(db.raw, [thread, other, nested])).toEqual(CLEAN);
    expect(await storedThreads(db.raw)).not.toContain(other);
    expect(await dumpTables(db.raw, [nested])).toEqual(nestedRows);

    // Several runs at once; a gap of more than one removed ancestor re-links across it.
    const afterR2 = await threadView(db.saver, thread);
    await db.saver.deleteForRuns(["r3", "r4", "r404"]);
    expect(await threadView(db.saver, thread)).toEqual(expectedAfter(afterR2, [c5, c7, c9], { [c6]: c2 }));
    expect(await integrity(db.raw, [thread])).toEqual(CLEAN);
  });

  it("removes a run's checkpoints in subgraph namespaces too, and whole threads when every checkpoint was the run's", async () => {
    const thread = newThreadId("runs-ns");
    const child = `child:${uuid6(-1)}`;
    const w = new HistoryWriter(db.saver, thread);
    const c1 = await w.put({ runId: "ns-1", values: { a: 1 } });
    const c2 = await w.put({
      runId: "ns-2",
      parent: c1,
      values: { a: 2 },
      writes: [{ taskId: "t", writes: [["a", 3]] }],
    });
    const s1 = await w.put({ ns: child, runId: "ns-2", values: { inner: 1 } });
    const s2 = await w.put({ ns: child, runId: "ns-2", parent: s1, values: { inner: 2 } });
    const s3 = await w.put({
      ns: child,
      runId: "ns-3",
      parent: s2,
      values: { other: 3 },
      writes: [{ taskId: "ti", writes: [["inner", 4]] }],
    });
    const whole = newThreadId("runs-whole");
    const ww = new HistoryWriter(db.saver, whole);
    await ww.chain(3, { runId: "ns-2" });
    await ww.chain(2, { runId: "ns-2", ns: child });
    const before = await threadView(db.saver, thread);

    await db.saver.deleteForRuns(["ns-2"]);

    expect(await threadView(db.saver, thread)).toEqual(expectedAfter(before, [c2, s1, s2], { [s3]: null }));
    expect(await storedCheckpoints(db.raw, thread)).toEqual([
      { ns: "", id: c1, parent: null },
      { ns: child, id: s3, parent: null },
    ]);
    // s3 still has every value, inherited ones included.
    expect((await db.saver.getTuple(w.config(s3, child)))?.checkpoint.channel_values).toEqual({ inner: 2, other: 3 });
    expect(await storedThreads(db.raw)).not.toContain(whole);
    expect(await integrity(db.raw, [thread, whole])).toEqual(CLEAN);
  });

  it("undoes a time-travel run of a real graph: the thread is back to exactly what it was", async () => {
    const graph = buildPipelineGraph(tagging);
    const thread = newThreadId("runs-undo");
    tagging.run = `run-a-${thread}`;
    await graph.invoke({ seed: 4 }, threadConfig(thread));
    const rowsA = await dumpTables(db.raw, [thread]);
    const historyA = (await history(graph, threadConfig(thread))).map(normalSnapshot);

    tagging.run = `run-b-${thread}`;
    const afterOne = (await history(graph, threadConfig(thread))).find((s) => s.next[0] === "two");
    if (!afterOne) throw new Error("no checkpoint waiting for two");
    await graph.invoke(null, await graph.updateState(afterOne.config, { total: 9, trail: ["fork"] }));
    expect((await graph.getState(threadConfig(thread))).values.trail).toContain("fork");

    await db.saver.deleteForRuns([`run-b-${thread}`]);

    expect(await dumpTables(db.raw, [thread])).toEqual(rowsA);
    expect((await history(graph, threadConfig(thread))).map(normalSnapshot)).toEqual(historyA);
    expect(await integrity(db.raw, [thread])).toEqual(CLEAN);
    // And the thread carries on from there.
    tagging.run = `run-c-${thread}`;
    expect(await graph.invoke({ seed: 1 }, threadConfig(thread))).toEqual({
      seed: 1,
      trail: ["one:4", "two:5", "three:10", "four:110", "one:1", "two:2", "three:4", "four:104"],
      total: 103,
      note: "started at 1, ended at 103",
    });
  });

  it("removing the first run of a resumed subgraph graph leaves the second run's checkpoints, re-linked, readable", async () => {
    const graph = buildTripGraph(tagging, { confirm: 0 });
    const thread = newThreadId("runs-trip");
    tagging.run = `trip-a-${thread}`;
    await graph.invoke({ destination: "Rome" }, threadConfig(thread));
    const runA = (await storedCheckpoints(db.raw, thread)).map((c) => c.id);
    tagging.run = `trip-b-${thread}`;
    const done = await graph.invoke(new Command({ resume: "1A" }), threadConfig(thread));
    const before = await threadView(db.saver, thread);
    const finalState = normalSnapshot(await graph.getState(threadConfig(thread)));
    const namespaces = new Set(before.map((tuple) => tuple.ns));
    expect(namespaces.size).toBe(2);

    await db.saver.deleteForRuns([`trip-a-${thread}`]);

    const after = await threadView(db.saver, thread);
    // Run B's oldest checkpoint of each namespace had a parent in run A: now none.
    const relinked: Record<string, null> = {};
    for (const ns of namespaces) {
      const oldestB = before.filter((t) => t.ns === ns && !runA.includes(t.id))[0];
      relinked[oldestB.id] = null;
    }
    expect(after).toEqual(expectedAfter(before, runA, relinked));
    expect(after.every((tuple) => runIdOf(tuple.metadata) === `trip-b-${thread}`)).toBe(true);
    expect(await integrity(db.raw, [thread])).toEqual(CLEAN);
    expect(normalSnapshot(await graph.getState(threadConfig(thread)))).toEqual({ ...finalState });
    expect(normalize((await graph.getState(threadConfig(thread))).values)).toEqual(normalize(done));
  });

  /** Deletes each run in turn and checks it removed exactly what list's run_id filter finds. */
  async function deleteEachLikeList(thread: string, runIds: string[]) {
    for (const runId of runIds) {
      const expected: string[] = [];
      for await (const tuple of db.saver.list(threadConfig(thread), { filter: { run_id: runId } }))
        expected.push(String(tuple.config.configurable?.checkpoint_id));
      const before = (await storedCheckpoints(db.raw, thread)).map((c) => c.id);
      await db.saver.deleteForRuns([runId]);
      const after = (await storedCheckpoints(db.raw, thread)).map((c) => c.id);
      expect({ runId, removed: before.filter((id) => !after.includes(id)) }).toEqual({ runId, removed: expected });
    }
  }

  it("matches run ids exactly, like list's metadata filter", async () => {
    const thread = newThreadId("runs-exact");
    const w = new HistoryWriter(db.saver, thread);
    const ids = ["r1", "r10", "R1", "r_", "r%", "r1 ", `q'"\\`, "ünï-🙂", "$.run_id", "*"];
    let parent: string | undefined;
    for (const runId of ids) parent = await w.put({ parent, runId, values: { run: runId } });
    // A number is not the string of its digits.
    await w.put({ parent, metadata: { run_id: 7 }, values: { run: 7 } });

    await deleteEachLikeList(thread, ["7", "r"]);
    expect(await storedCheckpoints(db.raw, thread)).toHaveLength(ids.length + 1);
    await deleteEachLikeList(thread, ids);
    expect(await storedCheckpoints(db.raw, thread)).toHaveLength(1);
    expect(await integrity(db.raw, [thread])).toEqual(CLEAN);
  });

  it("matches run ids holding characters JSON columns cannot store as is (U+0000, a lone surrogate)", async () => {
    const thread = newThreadId("runs-escaped");
    const w = new HistoryWriter(db.saver, thread);
    const ids = ["with\u0000nul", "lone\ud800surrogate"];
    let parent: string | undefined;
    for (const runId of ids) parent = await w.put({ parent, runId, values: { run: runId } });
    await w.put({ parent, runId: "plain", values: { run: "plain" } });

    await deleteEachLikeList(thread, ids);
    expect((await threadView(db.saver, thread)).map((tuple) => runIdOf(tuple.metadata))).toEqual(["plain"]);
    expect(await integrity(db.raw, [thread])).toEqual(CLEAN);
  });

  it("unknown runs, an empty list and a second call change nothing", async () => {
    const thread = newThreadId("runs-noop");
    const w = new HistoryWriter(db.saver, thread);
    const chain = await w.chain(3, { runId: "noop-1" });
    await w.chain(2, { runId: "noop-2", parent: chain[1], label: "f" });
    await w.chain(2, { runId: "noop-2", ns: `child:${uuid6(-1)}` });
    const everything = await dumpTables(db.raw);

    await db.saver.deleteForRuns([]);
    await db.saver.deleteForRuns(["no-such-run"]);
    expect(await dumpTables(db.raw)).toEqual(everything);

    await db.saver.deleteForRuns(["noop-2"]);
    const once = await dumpTables(db.raw);
    expect(once).not.toEqual(everything);
    await db.saver.deleteForRuns(["noop-2"]);
    expect(await dumpTables(db.raw)).toEqual(once);
    expect(await integrity(db.raw, [thread])).toEqual(CLEAN);

    await expect(db.saver.deleteForRuns("noop-1" as unknown as string[])).rejects.toThrow(InvalidInputError);
    expect(await dumpTables(db.raw)).toEqual(once);
  });
});
