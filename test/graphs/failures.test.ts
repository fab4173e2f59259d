import { type BaseCheckpointSaver, MemorySaver } from "@langchain/langgraph";
import {
  buildFanOutGraph,
  buildParallelGraph,
  GRAPH_TARGETS,
  newThread,
  normalHistory,
  normalSnapshot,
  useFreshSaver,
} from "./graphs.js";

async function runParallel(checkpointer: BaseCheckpointSaver) {
  const counter = { steady: 0, flaky: 0, joined: 0, flakyFailures: 1 };
  const graph = buildParallelGraph(checkpointer, counter);
  const config = newThread("parallel");
  const failure = await graph.invoke({ input: "x" }, config).then(
    () => undefined,
    (error: unknown) => error,
  );
  const countsAfterFailure = { ...counter };
  const failed = await graph.getState(config);
  const result = await graph.invoke(null, config);
  const state = await graph.getState(config);
  return { failure, countsAfterFailure, failed, result, state, counter, history: await normalHistory(graph, config) };
}

async function runFailingFanOut(checkpointer: BaseCheckpointSaver) {
  const counter: { worker: number; failOn?: number } = { worker: 0, failOn: 2 };
  const graph = buildFanOutGraph(checkpointer, counter);
  const config = newThread("fan-out-failure");
  const failure = await graph.invoke({ items: [3, 1, 2, 5] }, config).then(
    () => undefined,
    (error: unknown) => error,
  );
  const workersAfterFailure = counter.worker;
  const failed = await graph.getState(config);
  const result = await graph.invoke(null, config);
  return { failure, workersAfterFailure, failed, result, counter, history: await normalHistory(graph, config) };
}

describe.each(GRAPH_TARGETS)("node failures on %s", (dialect) => {
  const db = useFreshSaver(dialect);

  it("resumes after a failed node without re-running its successful sibling", async () => {
    const drizzle = await runParallel(db.saver);
    const memory = await runParallel(new MemorySaver());

    expect(drizzle.failure).toBeInstanceOf(Error);
    expect((drizzle.failure as Error).message).toBe("flaky failed on x");
    expect(drizzle.countsAfterFailure).toEqual({ steady: 1, flaky: 1, joined: 0, flakyFailures: 0 });

    // The failed superstep: the sibling's write is saved, the failure recorded.
    expect(drizzle.failed.values).toEqual({ input: "x", outputs: ["steady saw x"] });
    expect(drizzle.failed.next).toEqual(["flaky"]);
    const steady = drizzle.failed.tasks.find((t) => t.name === "steady");
    const flaky = drizzle.failed.tasks.find((t) => t.name === "flaky");
    expect(steady?.result).toEqual({ outputs: ["steady saw x"] });
    expect(steady?.error).toBeUndefined();
    // LangGraph records a task's error as { name, message } (with MemorySaver too).
    expect(flaky?.error).toMatchObject({ name: "Error", message: "flaky failed on x" });
    expect(normalSnapshot(drizzle.failed)).toEqual(normalSnapshot(memory.failed));

    // Resumed with null input: only the failed node runs again.
    expect(drizzle.counter).toEqual({ steady: 1, flaky: 2, joined: 1, flakyFailures: 0 });
    expect(drizzle.result).toEqual({
      input: "x",
      outputs: ["flaky saw x", "steady saw x", "joined flaky saw x + steady saw x"],
    });
    expect(drizzle.state.values).toEqual(drizzle.result);
    expect(drizzle.state.next).toEqual([]);

    expect(drizzle.counter).toEqual(memory.counter);
    expect(drizzle.result).toEqual(memory.result);
    expect(normalSnapshot(drizzle.state)).toEqual(normalSnapshot(memory.state));
    expect(drizzle.history).toEqual(memory.history);
  });

  it("resumes a fan-out after one Send worker failed, re-running only that worker", async () => {
    const drizzle = await runFailingFanOut(db.saver);
    const memory = await runFailingFanOut(new MemorySaver());

    expect((drizzle.failure as Error).message).toBe("worker 2 failed");
    expect(drizzle.workersAfterFailure).toBe(4);
    // The three workers that succeeded kept their results; the failed one is pending.
    expect(drizzle.failed.values).toEqual({ items: [3, 1, 2, 5], results: ["split 4", "sq3=9", "sq1=1", "sq5=25"] });
    expect(drizzle.failed.next).toEqual(["worker"]);
    expect(normalSnapshot(drizzle.failed)).toEqual(normalSnapshot(memory.failed));

    expect(drizzle.counter.worker).toBe(5);
    expect(drizzle.result).toEqual({
      items: [3, 1, 2, 5],
      results: ["split 4", "sq3=9", "sq1=1", "sq2=4", "sq5=25"],
      summary: "5 results",
    });
    expect(drizzle.counter).toEqual(memory.counter);
    expect(drizzle.result).toEqual(memory.result);
    expect(drizzle.history).toEqual(memory.history);
  });
});
