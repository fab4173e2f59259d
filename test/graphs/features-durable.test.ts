/**
 * A DeltaChannel written by Send fan-out workers, a subgraph with a persistent
 * checkpointer of its own (`compile({ checkpointer: true })`) and an interrupt, run
 * turn after turn in each durability mode, on each dialect (plain and encrypted) and
 * on MemorySaver, every observable compared in canonical form (canon.ts). In "exit"
 * mode LangGraph saves a delta channel's writes of the whole run under synthetic task
 * ids at its end, which the saver must replay in the same order.
 */

import {
  Annotation,
  type BaseCheckpointSaver,
  Command,
  END,
  interrupt,
  MemorySaver,
  Send,
  START,
  StateGraph,
} from "@langchain/langgraph";
import { DeltaChannel } from "@langchain/langgraph/channels";
import { byNamespace, canonRun, collect, orderedHistory, STREAM_MODES } from "./canon.js";
import { DIALECT_TARGETS, newThread, useFreshSaver } from "./graphs.js";

const DURABILITIES = ["sync", "async", "exit"] as const;
type Durability = (typeof DURABILITIES)[number];

function concatAll(state: string[], writes: (string | string[])[]): string[] {
  return state.concat(writes.flat());
}

/**
 * Lets Send workers end strictly in item order, each a macrotask after the one
 * before, whatever the machine's load. Timers alone (item x 15 ms) were not enough:
 * the workers start one after the other (items come as [3, 1, 2]), and when other
 * work ran between two starts for longer than the gap (a loaded CI machine, the
 * saver's own async put beside them), a later item's timer fired first and the
 * stream events came in another order than MemorySaver's.
 */
function endInItemOrder(): (item: number) => Promise<void> {
  const ends = new Map<number, { promise: Promise<void>; resolve: () => void }>();
  const endOf = (item: number) => {
    let end = ends.get(item);
    if (end === undefined) {
      let resolve = () => {};
      const promise = new Promise<void>((done) => {
        resolve = done;
      });
      end = { promise, resolve };
      ends.set(item, end);
    }
    return end;
  };
  return async (item) => {
    if (item > 1) await endOf(item - 1).promise;
    // A macrotask: the runner commits the previous worker (microtasks only) first.
    await new Promise((resolve) => setImmediate(resolve));
    endOf(item).resolve();
  };
}

function buildGraph(checkpointer: BaseCheckpointSaver) {
  const endInTurn = endInItemOrder();
  const State = Annotation.Root({
    items: Annotation<number[]>,
    log: new DeltaChannel<string[], string | string[]>(concatAll, { snapshotFrequency: 2 }),
    count: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
  });
  const MemoState = Annotation.Root({
    count: Annotation<number>,
    seen: Annotation<number[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  });
  // Remembers every count it was given, across the parent's turns.
  const memo = new StateGraph(MemoState)
    .addNode("remember", (state) => ({ seen: [state.count] }))
    .addEdge(START, "remember")
    .addEdge("remember", END)
    .compile({ checkpointer: true });
  return new StateGraph(State)
    .addNode("split", (state) => ({ log: [`split ${state.items.length}`] }))
    .addNode(
      "worker",
      async (input: { item: number }) => {
        await endInTurn(input.item);
        return { log: [`w${input.item}`, `w${input.item} again`], count: input.item };
      },
      { input: Annotation.Root({ item: Annotation<number> }) },
    )
    .addNode("memo", async (state) => {
      const result = await memo.invoke({ count: state.count });
      return { log: [`memo saw ${result.seen.join(",")}`] };
    })
    .addNode("ask", (state) => ({ log: [`answer ${interrupt<number, string>(state.log.length)}`] }))
    .addEdge(START, "split")
    .addConditionalEdges("split", (state) => state.items.map((item) => new Send("worker", { item })), ["worker"])
    .addEdge("worker", "memo")
    .addEdge("memo", "ask")
    .addEdge("ask", END)
    .compile({ checkpointer });
}

async function runTurns(checkpointer: BaseCheckpointSaver, durability: Durability) {
  const graph = buildGraph(checkpointer);
  const config = newThread(`durable-${durability}`);
  const options = { ...config, durability, streamMode: STREAM_MODES, subgraphs: true };
  const turnOne = await collect(graph.stream({ items: [3, 1, 2] }, options));
  const pausedOne = await graph.getState(config, { subgraphs: true });
  const resumedOne = await collect(graph.stream(new Command({ resume: "one" }), options));
  const turnTwo = await collect(graph.stream({ items: [4] }, options));
  const resumedTwo = await collect(graph.stream(new Command({ resume: "two" }), options));
  const done = await graph.getState(config, { subgraphs: true });
  const all = await orderedHistory(graph, config);
  const everyState = await Promise.all(all.map(async (s) => (await graph.getState(s.config)).values));
  const memoHistory = await orderedHistory(graph, {
    configurable: { thread_id: config.configurable.thread_id, checkpoint_ns: "memo" },
  });
  return canonRun(
    {
      all,
      memoHistory,
      everyState,
      pausedOne,
      done,
      turnOne: byNamespace(turnOne),
      resumedOne: byNamespace(resumedOne),
      turnTwo: byNamespace(turnTwo),
      resumedTwo: byNamespace(resumedTwo),
    },
    { [config.configurable.thread_id]: "<thread>" },
  );
}

describe.each(DIALECT_TARGETS)("delta channels, Send and a persistent subgraph by durability on %s", (target) => {
  const db = useFreshSaver(target);

  it.each(DURABILITIES)("runs two turns with %s durability like MemorySaver", async (durability) => {
    const drizzle = await runTurns(db.saver, durability);
    const memory = await runTurns(new MemorySaver(), durability);
    expect(drizzle).toEqual(memory);
    const done = drizzle.done as { values: { log: string[]; count: number } };
    expect(done.values.count).toBe(10);
    expect(done.values.log).toContain("memo saw 6,10");
    expect(done.values.log.at(-1)).toBe("answer two");
  });
});
