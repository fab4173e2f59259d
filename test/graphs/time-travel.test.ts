import type { RunnableConfig } from "@langchain/core/runnables";
import { type BaseCheckpointSaver, MemorySaver, type StateSnapshot } from "@langchain/langgraph";
import {
  buildPipelineGraph,
  GRAPH_TARGETS,
  history,
  type NormalSnapshot,
  newThread,
  normalSnapshot,
  useFreshSaver,
} from "./graphs.js";

function findByNext(snapshots: StateSnapshot[], next: string): StateSnapshot {
  const found = snapshots.find((s) => s.next.length === 1 && s.next[0] === next);
  if (!found) throw new Error(`no checkpoint waiting for ${next}`);
  return found;
}

async function readAll(
  graph: ReturnType<typeof buildPipelineGraph>,
  configs: RunnableConfig[],
): Promise<NormalSnapshot[]> {
  return Promise.all(configs.map(async (config) => normalSnapshot(await graph.getState(config))));
}

/**
 * Runs the pipeline, then forks it three times: twice from the checkpoint after
 * "one" (the fork's channel versions follow that checkpoint's, as do the original
 * branch's next versions), once from the checkpoint after "two" as if "three" ran.
 */
async function runTimeTravel(checkpointer: BaseCheckpointSaver) {
  const graph = buildPipelineGraph(checkpointer);
  const config = newThread("time-travel");
  const original = await graph.invoke({ seed: 5 }, config);
  const originalHistory = await history(graph, config);
  const originalConfigs = originalHistory.map((s) => s.config);
  const originalBefore = await readAll(graph, originalConfigs);

  const afterOne = findByNext(originalHistory, "two");
  const afterTwo = findByNext(originalHistory, "three");

  const forkA = await graph.updateState(afterOne.config, { total: 1000, trail: ["fork A"] });
  const forkAState = await graph.getState(forkA);
  const forkAResult = await graph.invoke(null, forkA);
  const forkAHistory = await history(graph, config);

  const forkB = await graph.updateState(afterOne.config, { total: -7, trail: ["fork B"], note: "rewritten" });
  const forkBState = await graph.getState(forkB);
  const forkBResult = await graph.invoke(null, forkB);

  const forkC = await graph.updateState(afterTwo.config, { total: 40 }, "three");
  const forkCState = await graph.getState(forkC);
  const forkCResult = await graph.invoke(null, forkC);

  const latest = await graph.getState(config);
  const fullHistory = await history(graph, config);
  const originalAfter = await readAll(graph, originalConfigs);
  // Every checkpoint of fork A, read again after forks B and C were written.
  const forkAConfigs = forkAHistory.slice(0, forkAHistory.length - originalHistory.length).map((s) => s.config);
  const forkAAfter = await readAll(graph, forkAConfigs);
  return {
    original,
    originalBefore,
    originalAfter,
    forkAState,
    forkAResult,
    forkAAfter,
    forkABefore: forkAHistory.slice(0, forkAConfigs.length).map(normalSnapshot),
    forkBState,
    forkBResult,
    forkCState,
    forkCResult,
    latest,
    fullHistory: fullHistory.map(normalSnapshot),
  };
}

describe.each(GRAPH_TARGETS)("time travel on %s", (dialect) => {
  const db = useFreshSaver(dialect);

  it("forks from old checkpoints without touching the original branch, like MemorySaver", async () => {
    const drizzle = await runTimeTravel(db.saver);
    const memory = await runTimeTravel(new MemorySaver());

    expect(drizzle.original).toEqual({
      seed: 5,
      trail: ["one:5", "two:6", "three:12", "four:112"],
      total: 111,
      note: "started at 5, ended at 111",
    });
    expect(drizzle.originalBefore.map((s) => [s.source, s.step, s.next])).toEqual([
      ["loop", 4, []],
      ["loop", 3, ["four"]],
      ["loop", 2, ["three"]],
      ["loop", 1, ["two"]],
      ["loop", 0, ["one"]],
      ["input", -1, ["__start__"]],
    ]);

    // Fork A: the update is what the fork reads, not the original's next values.
    expect(drizzle.forkAState.values).toEqual({
      seed: 5,
      trail: ["one:5", "fork A"],
      total: 1000,
      note: "started at 5",
    });
    expect(drizzle.forkAState.next).toEqual(["two"]);
    expect(drizzle.forkAState.metadata?.source).toBe("update");
    expect(drizzle.forkAResult).toEqual({
      seed: 5,
      trail: ["one:5", "fork A", "two:1000", "three:2000", "four:2100"],
      total: 2099,
      note: "started at 5, ended at 2099",
    });

    // Fork B, from the same checkpoint as fork A.
    expect(drizzle.forkBState.values).toEqual({ seed: 5, trail: ["one:5", "fork B"], total: -7, note: "rewritten" });
    expect(drizzle.forkBResult).toEqual({
      seed: 5,
      trail: ["one:5", "fork B", "two:-7", "three:-14", "four:86"],
      total: 85,
      note: "rewritten, ended at 85",
    });

    // Fork C, as if node "three" had produced total 40.
    expect(drizzle.forkCState.values).toEqual({ seed: 5, trail: ["one:5", "two:6"], total: 40, note: "started at 5" });
    expect(drizzle.forkCState.next).toEqual(["four"]);
    expect(drizzle.forkCResult).toEqual({
      seed: 5,
      trail: ["one:5", "two:6", "four:40"],
      total: 39,
      note: "started at 5, ended at 39",
    });
    expect(drizzle.latest.values).toEqual(drizzle.forkCResult);

    // Nothing written on a fork changed what an older checkpoint reads.
    expect(drizzle.originalAfter).toEqual(drizzle.originalBefore);
    expect(drizzle.forkAAfter).toEqual(drizzle.forkABefore);
    expect(drizzle.forkAAfter.map((s) => s.values)).toEqual([
      drizzle.forkAResult,
      { seed: 5, trail: ["one:5", "fork A", "two:1000", "three:2000"], total: 2100, note: "started at 5" },
      { seed: 5, trail: ["one:5", "fork A", "two:1000"], total: 2000, note: "started at 5" },
      { seed: 5, trail: ["one:5", "fork A"], total: 1000, note: "started at 5" },
    ]);

    expect(drizzle.originalBefore).toEqual(memory.originalBefore);
    expect(drizzle.originalAfter).toEqual(memory.originalAfter);
    expect(drizzle.forkAAfter).toEqual(memory.forkAAfter);
    expect(normalSnapshot(drizzle.forkAState)).toEqual(normalSnapshot(memory.forkAState));
    expect(normalSnapshot(drizzle.forkBState)).toEqual(normalSnapshot(memory.forkBState));
    expect(normalSnapshot(drizzle.forkCState)).toEqual(normalSnapshot(memory.forkCState));
    expect(drizzle.forkAResult).toEqual(memory.forkAResult);
    expect(drizzle.forkBResult).toEqual(memory.forkBResult);
    expect(drizzle.forkCResult).toEqual(memory.forkCResult);
    expect(normalSnapshot(drizzle.latest)).toEqual(normalSnapshot(memory.latest));
    // Four branches in one thread: 6 original checkpoints, 4 per fork from "one", 2 for fork C.
    expect(drizzle.fullHistory).toHaveLength(6 + 4 + 4 + 2);
    expect(drizzle.fullHistory).toEqual(memory.fullHistory);
  });

  it("replays from an old checkpoint and keeps both runs readable", async () => {
    const graph = buildPipelineGraph(db.saver);
    const config = newThread("replay");
    await graph.invoke({ seed: 1 }, config);
    const snapshots = await history(graph, config);
    const afterTwo = findByNext(snapshots, "three");
    const before = await readAll(
      graph,
      snapshots.map((s) => s.config),
    );
    // Replaying from a checkpoint re-runs the rest of the graph on a new branch.
    const replayed = await graph.invoke(null, afterTwo.config);
    expect(replayed).toEqual({
      seed: 1,
      trail: ["one:1", "two:2", "three:4", "four:104"],
      total: 103,
      note: "started at 1, ended at 103",
    });
    expect(
      await readAll(
        graph,
        snapshots.map((s) => s.config),
      ),
    ).toEqual(before);
    const after = await history(graph, config);
    expect(after.length).toBeGreaterThan(snapshots.length);
    expect((await graph.getState(config)).values).toEqual(replayed);
  });
});
