import { type BaseCheckpointSaver, MemorySaver } from "@langchain/langgraph";
import { buildFanOutGraph, GRAPH_TARGETS, newThread, normalHistory, normalSnapshot, useFreshSaver } from "./graphs.js";

async function runFanOut(checkpointer: BaseCheckpointSaver, items: number[]) {
  const counter = { worker: 0 };
  const graph = buildFanOutGraph(checkpointer, counter);
  const config = newThread("fan-out");
  const result = await graph.invoke({ items }, config);
  const state = await graph.getState(config);
  return { result, state, history: await normalHistory(graph, config), counter };
}

describe.each(GRAPH_TARGETS)("Send fan-out on %s", (dialect) => {
  const db = useFreshSaver(dialect);

  it("runs one worker per Send and reduces their results like MemorySaver", async () => {
    const items = [3, 1, 4, 2, 5];
    const drizzle = await runFanOut(db.saver, items);
    const memory = await runFanOut(new MemorySaver(), items);

    const results = ["split 5", "sq3=9", "sq1=1", "sq4=16", "sq2=4", "sq5=25"];
    // LangGraph applies the workers' writes in Send order, with either saver.
    expect(drizzle.result).toEqual({ items, results, summary: "6 results" });
    expect(memory.result).toEqual(drizzle.result);
    expect([...drizzle.result.results].sort()).toEqual([...memory.result.results].sort());
    expect(drizzle.state.values).toEqual(drizzle.result);
    expect(drizzle.counter).toEqual({ worker: 5 });
    expect(memory.counter).toEqual({ worker: 5 });

    expect(normalSnapshot(drizzle.state)).toEqual(normalSnapshot(memory.state));
    expect(drizzle.history).toEqual(memory.history);
    // The checkpoint before the workers lists one pending task per Send.
    const fanned = drizzle.history.find((s) => s.step === 1);
    expect(fanned?.next).toEqual(["worker", "worker", "worker", "worker", "worker"]);
    expect(fanned?.tasks.map((t) => t.result)).toEqual([
      { results: ["sq3=9"] },
      { results: ["sq1=1"] },
      { results: ["sq4=16"] },
      { results: ["sq2=4"] },
      { results: ["sq5=25"] },
    ]);
  });

  it("fans out again on the next turn of the same thread", async () => {
    const counter = { worker: 0 };
    const graph = buildFanOutGraph(db.saver, counter);
    const config = newThread("fan-out-again");
    await graph.invoke({ items: [1, 2] }, config);
    const second = await graph.invoke({ items: [7] }, config);
    expect(second).toEqual({
      items: [7],
      results: ["split 2", "sq1=1", "sq2=4", "split 1", "sq7=49"],
      summary: "5 results",
    });
    expect(counter.worker).toBe(3);

    const memoryGraph = buildFanOutGraph(new MemorySaver(), { worker: 0 });
    const memoryConfig = newThread("fan-out-again-memory");
    await memoryGraph.invoke({ items: [1, 2] }, memoryConfig);
    expect(await memoryGraph.invoke({ items: [7] }, memoryConfig)).toEqual(second);
    expect(await normalHistory(graph, config)).toEqual(await normalHistory(memoryGraph, memoryConfig));
  });
});
