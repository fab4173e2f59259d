import { Command, type StateSnapshot } from "@langchain/langgraph";
import { ERROR, INTERRUPT, uuid6 } from "@langchain/langgraph-checkpoint";
import { InvalidInputError } from "../../src/index.js";
import {
  buildPipelineGraph,
  buildTripGraph,
  history,
  normalHistory,
  normalize,
  normalSnapshot,
} from "../graphs/graphs.js";
import { DIALECTS } from "../helpers/databases.js";
import {
  CLEAN,
  dumpTables,
  HistoryWriter,
  integrity,
  newThreadId,
  sha256Hex,
  storedThreads,
  threadConfig,
  threadView,
  useFreshSaver,
} from "./support.js";

function subgraphNamespace(snapshot: StateSnapshot): string {
  const task = snapshot.tasks.find((t) => t.state !== undefined && "config" in (t.state as object));
  const ns = (task?.state as StateSnapshot | undefined)?.config.configurable?.checkpoint_ns;
  if (typeof ns !== "string" || ns === "") throw new Error("no subgraph state in the snapshot");
  return ns;
}

/** What a copy must have: every row of the source, column for column, under the target's thread id. */
const COPY_OMITS = ["thread_id", "created_at"];

describe.each(DIALECTS)("copyThread on %s", (dialect) => {
  const db = useFreshSaver(dialect);

  it("copies a paused graph with a subgraph namespace; the copy resumes on its own and neither sees the other", async () => {
    const counter = { confirm: 0 };
    const graph = buildTripGraph(db.saver, counter);
    const source = newThreadId("copy-trip");
    const target = newThreadId("copy-trip-target");
    await graph.invoke({ destination: "Oslo" }, threadConfig(source));
    const paused = await graph.getState(threadConfig(source), { subgraphs: true });
    const ns = subgraphNamespace(paused);
    expect(await integrity(db.raw, [source])).toEqual(CLEAN);
    const sourceRows = await dumpTables(db.raw, [source]);
    // The paused thread has rows in both namespaces and its interrupt as a pending write.
    expect(new Set(sourceRows.checkpoints.map((row) => row.checkpoint_ns))).toEqual(new Set(["", ns]));
    expect(sourceRows.checkpoint_writes.some((row) => row.channel === INTERRUPT)).toBe(true);

    await db.saver.copyThread(source, target);

    // Row for row the same data, under the new thread id; the source is untouched.
    expect(await dumpTables(db.raw, [target], COPY_OMITS)).toEqual(await dumpTables(db.raw, [source], COPY_OMITS));
    expect(await dumpTables(db.raw, [source])).toEqual(sourceRows);
    expect(await integrity(db.raw, [source, target])).toEqual(CLEAN);
    // And the saver reads it back the same: tuples, graph state with subgraphs, histories of both namespaces.
    expect(await threadView(db.saver, target)).toEqual(await threadView(db.saver, source));
    expect(normalSnapshot(await graph.getState(threadConfig(target), { subgraphs: true }))).toEqual(
      normalSnapshot(paused),
    );
    expect(await normalHistory(graph, threadConfig(target))).toEqual(await normalHistory(graph, threadConfig(source)));
    expect(await normalHistory(graph, threadConfig(target, ns))).toEqual(
      await normalHistory(graph, threadConfig(source, ns)),
    );

    // Resuming the copy leaves the source's rows exactly as they were...
    const copyResult = await graph.invoke(new Command({ resume: "7C" }), threadConfig(target));
    expect(await dumpTables(db.raw, [source])).toEqual(sourceRows);
    const targetRows = await dumpTables(db.raw, [target]);
    // ...and resuming the source leaves the copy's.
    const sourceResult = await graph.invoke(new Command({ resume: "12A" }), threadConfig(source));
    expect(await dumpTables(db.raw, [target])).toEqual(targetRows);

    expect(normalize(copyResult)).toEqual({
      destination: "Oslo",
      steps: ["plan Oslo", "done: quote for Oslo; seat 7C confirmed; ticket #2 issued"],
      booking: ["quote for Oslo", "seat 7C confirmed", "ticket #2 issued"],
    });
    expect(normalize(sourceResult)).toEqual({
      destination: "Oslo",
      steps: ["plan Oslo", "done: quote for Oslo; seat 12A confirmed; ticket #2 issued"],
      booking: ["quote for Oslo", "seat 12A confirmed", "ticket #2 issued"],
    });

    // The copy behaved exactly like a thread that was never copied.
    const twin = newThreadId("copy-trip-twin");
    const twinGraph = buildTripGraph(db.saver, { confirm: 0 });
    await twinGraph.invoke({ destination: "Oslo" }, threadConfig(twin));
    // The subgraph's namespace holds its task id, which differs between threads.
    const twinNs = subgraphNamespace(await twinGraph.getState(threadConfig(twin), { subgraphs: true }));
    const twinResult = await twinGraph.invoke(new Command({ resume: "7C" }), threadConfig(twin));
    expect(normalize(copyResult)).toEqual(normalize(twinResult));
    expect(await normalHistory(graph, threadConfig(target))).toEqual(await normalHistory(graph, threadConfig(twin)));
    expect(await normalHistory(graph, threadConfig(target, ns))).toEqual(
      await normalHistory(graph, threadConfig(twin, twinNs)),
    );
    expect(await integrity(db.raw, [source, target, twin])).toEqual(CLEAN);
  });

  it("copies a branched history made by time travel; a fork of the copy stays in the copy", async () => {
    const graph = buildPipelineGraph(db.saver);
    const source = newThreadId("copy-fork");
    const target = newThreadId("copy-fork-target");
    await graph.invoke({ seed: 5 }, threadConfig(source));
    const original = await history(graph, threadConfig(source));
    const afterOne = original.find((s) => s.next.length === 1 && s.next[0] === "two");
    if (!afterOne) throw new Error("no checkpoint waiting for two");
    const fork = await graph.updateState(afterOne.config, { total: 1000, trail: ["fork A"] });
    await graph.invoke(null, fork);
    const branched = await history(graph, threadConfig(source));
    // Two branches: the fork's checkpoints have a parent that is not the newest checkpoint.
    expect(branched.length).toBeGreaterThan(original.length);

    await db.saver.copyThread(source, target);

    expect(await dumpTables(db.raw, [target], COPY_OMITS)).toEqual(await dumpTables(db.raw, [source], COPY_OMITS));
    expect(await threadView(db.saver, target)).toEqual(await threadView(db.saver, source));
    const copied = await history(graph, threadConfig(target));
    expect(copied.map((s) => s.config.configurable?.checkpoint_id)).toEqual(
      branched.map((s) => s.config.configurable?.checkpoint_id),
    );
    expect(copied.map(normalSnapshot)).toEqual(branched.map(normalSnapshot));
    expect(copied.map((s) => s.parentConfig?.configurable?.checkpoint_id)).toEqual(
      branched.map((s) => s.parentConfig?.configurable?.checkpoint_id),
    );

    // Time travel in the copy, from the same old checkpoint: a new branch there only.
    const sourceRows = await dumpTables(db.raw, [source]);
    const oldInCopy = { configurable: { ...afterOne.config.configurable, thread_id: target } };
    const copyFork = await graph.updateState(oldInCopy, { total: -7, trail: ["fork B"] });
    const copyForkResult = await graph.invoke(null, copyFork);
    expect(copyForkResult).toEqual({
      seed: 5,
      trail: ["one:5", "fork B", "two:-7", "three:-14", "four:86"],
      total: 85,
      note: "started at 5, ended at 85",
    });
    expect(await dumpTables(db.raw, [source])).toEqual(sourceRows);
    expect((await history(graph, threadConfig(source))).map(normalSnapshot)).toEqual(branched.map(normalSnapshot));
    expect((await history(graph, threadConfig(target))).length).toBe(branched.length + 4);

    // The same fork on the source gives the same result.
    const sourceFork = await graph.updateState(afterOne.config, { total: -7, trail: ["fork B"] });
    expect(await graph.invoke(null, sourceFork)).toEqual(copyForkResult);
    expect(await normalHistory(graph, threadConfig(target))).toEqual(await normalHistory(graph, threadConfig(source)));
    expect(await integrity(db.raw, [source, target])).toEqual(CLEAN);
  });

  it("copies checkpoints of every namespace with their pending writes and shared blobs", async () => {
    const source = newThreadId("copy-ns");
    const target = newThreadId("copy-ns-target");
    const child = `child:${uuid6(-1)}`;
    const grandchild = `${child}|grand:${uuid6(-1)}`;
    const writer = new HistoryWriter(db.saver, source);
    const root = await writer.put({ values: { topic: "weather", big: "x".repeat(10_000) } });
    const main = await writer.put({
      parent: root,
      values: { topic: "rain" },
      writes: [
        { taskId: "task-b", taskPath: "~1", writes: [["log", "b1"]] },
        {
          taskId: "task-a",
          taskPath: "~2",
          writes: [
            ["log", "a1"],
            ["log", "a2"],
          ],
        },
      ],
    });
    // A fork from the root, written after the main branch: its parent is not the newest checkpoint.
    await writer.put({
      parent: root,
      values: { topic: "snow" },
      writes: [{ taskId: "task-f", writes: [[ERROR, "boom"]] }],
    });
    await writer.put({ parent: main, values: { count: 2 } });
    const sub = await writer.put({ ns: child, values: { inner: [1, 2, 3] } });
    await writer.put({
      ns: child,
      parent: sub,
      values: { inner: [4] },
      writes: [{ taskId: "task-i", writes: [[INTERRUPT, { question: "seat?" }]] }],
    });
    await writer.put({ ns: grandchild, values: { deep: { nested: true } } });
    expect(await integrity(db.raw, [source])).toEqual(CLEAN);

    await db.saver.copyThread(source, target);

    const copied = await dumpTables(db.raw, [target], COPY_OMITS);
    expect(copied).toEqual(await dumpTables(db.raw, [source], COPY_OMITS));
    expect(copied.checkpoints).toHaveLength(7);
    expect(new Set(copied.checkpoints.map((row) => row.checkpoint_ns))).toEqual(new Set(["", child, grandchild]));
    if (dialect === "mysql") {
      // The namespace keys were copied consistently with the namespaces.
      for (const table of ["checkpoints", "checkpoint_blobs", "checkpoint_writes"] as const) {
        for (const row of copied[table]) expect(row.ns_hash).toBe(sha256Hex(String(row.checkpoint_ns)));
      }
    }
    const sourceView = await threadView(db.saver, source);
    expect(await threadView(db.saver, target)).toEqual(sourceView);
    const withWrites = sourceView.filter((tuple) => (tuple.pendingWrites ?? []).length > 0);
    expect(withWrites.map((tuple) => tuple.pendingWrites?.map(([task, channel]) => `${task}/${channel}`))).toEqual(
      expect.arrayContaining([
        ["task-b/log", "task-a/log", "task-a/log"],
        ["task-f/__error__"],
        ["task-i/__interrupt__"],
      ]),
    );
    expect(await integrity(db.raw, [source, target])).toEqual(CLEAN);

    // Writes added to the copy later are the copy's only.
    const sourceRows = await dumpTables(db.raw, [source]);
    await db.saver.putWrites(
      { configurable: { thread_id: target, checkpoint_ns: "", checkpoint_id: main } },
      [["log", "late"]],
      "task-late",
    );
    await new HistoryWriter(db.saver, target).put({ ns: child, values: { other: 1 } });
    expect(await dumpTables(db.raw, [source])).toEqual(sourceRows);
  });

  it("refuses a target that already has checkpoints, and writes nothing", async () => {
    const source = newThreadId("copy-busy");
    const target = newThreadId("copy-busy-target");
    await new HistoryWriter(db.saver, source).chain(3);
    await new HistoryWriter(db.saver, target).chain(1, { label: "t" });
    const before = await dumpTables(db.raw, [source, target]);

    await expect(db.saver.copyThread(source, target)).rejects.toThrow(InvalidInputError);
    await expect(db.saver.copyThread(source, target)).rejects.toThrow(/not empty/);
    expect(await dumpTables(db.raw, [source, target])).toEqual(before);

    // A target with a checkpoint in a subgraph namespace only is not empty either.
    const nsTarget = newThreadId("copy-busy-ns");
    await new HistoryWriter(db.saver, nsTarget).put({ ns: `child:${uuid6(-1)}`, values: { a: 1 } });
    const nsBefore = await dumpTables(db.raw, [nsTarget]);
    await expect(db.saver.copyThread(source, nsTarget)).rejects.toThrow(/not empty/);
    expect(await dumpTables(db.raw, [nsTarget])).toEqual(nsBefore);

    await expect(db.saver.copyThread(source, source)).rejects.toThrow(InvalidInputError);
    expect(await dumpTables(db.raw, [source, target])).toEqual(before);
  });

  it("a second copy to the same target fails clearly and changes nothing", async () => {
    const source = newThreadId("copy-twice");
    const target = newThreadId("copy-twice-target");
    const writer = new HistoryWriter(db.saver, source);
    const chain = await writer.chain(4);
    await writer.put({ parent: chain[1], values: { step: "fork" } });
    await writer.chain(2, { ns: `child:${uuid6(-1)}` });

    await db.saver.copyThread(source, target);
    const after = await dumpTables(db.raw, [source, target]);
    await expect(db.saver.copyThread(source, target)).rejects.toThrow(/not empty/);
    expect(await dumpTables(db.raw, [source, target])).toEqual(after);
    expect(await integrity(db.raw, [source, target])).toEqual(CLEAN);
  });

  it("refuses an unknown (or emptied) source: InvalidInputError, nothing written, the target usable", async () => {
    // A typo in the source's id copied nothing and looked like success.
    const unknown = newThreadId("copy-unknown");
    const target = newThreadId("copy-unknown-target");
    const refused = db.saver.copyThread(unknown, target);
    await expect(refused).rejects.toThrow(InvalidInputError);
    await expect(db.saver.copyThread(unknown, target)).rejects.toThrow(
      `copyThread: source thread "${unknown}" has no checkpoints; nothing was copied`,
    );
    const emptied = newThreadId("copy-emptied");
    await new HistoryWriter(db.saver, emptied).chain(2);
    await db.saver.deleteThread(emptied);
    await expect(db.saver.copyThread(emptied, target)).rejects.toThrow(/source thread .* has no checkpoints/);
    const stored = await storedThreads(db.raw);
    expect(stored).not.toContain(target);
    expect(stored).not.toContain(unknown);
    expect(stored).not.toContain(emptied);
    expect(await db.saver.getTuple(threadConfig(target))).toBeUndefined();

    // Still empty, so a real copy into it works.
    const source = newThreadId("copy-unknown-source");
    await new HistoryWriter(db.saver, source).chain(2);
    await db.saver.copyThread(source, target);
    expect(await threadView(db.saver, target)).toEqual(await threadView(db.saver, source));
  });

  it("treats thread ids exactly: ids differing in case or a trailing space are other threads", async () => {
    const source = newThreadId("Copy-Case");
    await new HistoryWriter(db.saver, source).chain(2);
    for (const target of [source.toLowerCase(), `${source} `]) {
      await db.saver.copyThread(source, target);
      expect(await threadView(db.saver, target)).toEqual(await threadView(db.saver, source));
    }
    expect(await integrity(db.raw, [source, source.toLowerCase(), `${source} `])).toEqual(CLEAN);
  });
});
