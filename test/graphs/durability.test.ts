import { type BaseCheckpointSaver, MemorySaver } from "@langchain/langgraph";
import {
  buildParallelGraph,
  buildPipelineGraph,
  GRAPH_TARGETS,
  newThread,
  normalHistory,
  normalSnapshot,
  useFreshSaver,
} from "./graphs.js";

const MODES = ["sync", "exit"] as const;
type Mode = (typeof MODES)[number];

async function runPipeline(checkpointer: BaseCheckpointSaver, durability: Mode) {
  const graph = buildPipelineGraph(checkpointer);
  const config = newThread(`durability-${durability}`);
  const first = await graph.invoke({ seed: 2 }, { ...config, durability });
  const second = await graph.invoke({ seed: 3 }, { ...config, durability });
  return {
    first,
    second,
    state: normalSnapshot(await graph.getState(config)),
    history: await normalHistory(graph, config),
  };
}

async function runFailure(checkpointer: BaseCheckpointSaver, durability: Mode) {
  const counter = { steady: 0, flaky: 0, joined: 0, flakyFailures: 1 };
  const graph = buildParallelGraph(checkpointer, counter);
  const config = newThread(`durability-failure-${durability}`);
  const failure = await graph.invoke({ input: durability }, { ...config, durability }).then(
    () => "no error",
    (error: unknown) => (error instanceof Error ? error.message : String(error)),
  );
  const failed = normalSnapshot(await graph.getState(config));
  const result = await graph.invoke(null, { ...config, durability });
  return { failure, failed, result, counter, history: await normalHistory(graph, config) };
}

describe.each(GRAPH_TARGETS)("durability modes on %s", (dialect) => {
  const db = useFreshSaver(dialect);

  it.each(MODES)("saves what MemorySaver saves with durability %s", async (durability) => {
    const drizzle = await runPipeline(db.saver, durability);
    const memory = await runPipeline(new MemorySaver(), durability);
    expect(drizzle.second).toEqual({
      seed: 3,
      trail: ["one:2", "two:3", "three:6", "four:106", "one:3", "two:4", "three:8", "four:108"],
      total: 107,
      note: "started at 3, ended at 107",
    });
    expect(drizzle.first).toEqual(memory.first);
    expect(drizzle.second).toEqual(memory.second);
    expect(drizzle.state).toEqual(memory.state);
    expect(drizzle.history).toEqual(memory.history);
    // "exit" keeps only the checkpoints at the end of each run; "sync" keeps every step.
    expect(drizzle.history.length).toBe(durability === "exit" ? 2 : 12);
  });

  it.each(MODES)("recovers from a failed node like MemorySaver with durability %s", async (durability) => {
    const drizzle = await runFailure(db.saver, durability);
    const memory = await runFailure(new MemorySaver(), durability);
    expect(drizzle.failure).toBe(`flaky failed on ${durability}`);
    expect(drizzle.result.outputs).toContain(`flaky saw ${durability}`);
    expect(drizzle.failed).toEqual(memory.failed);
    expect(drizzle.result).toEqual(memory.result);
    expect(drizzle.counter).toEqual(memory.counter);
    expect(drizzle.history).toEqual(memory.history);
  });
});
