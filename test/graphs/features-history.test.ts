/**
 * Editing and reading a thread's past, run on each dialect (plain and encrypted) and
 * on MemorySaver, every observable compared in canonical form (canon.ts):
 * updateState with asNode on a past checkpoint (a fork) and on a parallel step,
 * "__copy__", bulkUpdateState, an update inside a paused subgraph, invoking from
 * each fork; getStateHistory with filter, before and limit, alone and combined.
 */

import {
  Annotation,
  type BaseCheckpointSaver,
  Command,
  END,
  interrupt,
  MemorySaver,
  START,
  StateGraph,
  type StateSnapshot,
} from "@langchain/langgraph";
import { DeltaChannel } from "@langchain/langgraph/channels";
import { canonRun, checkOrder, collect, orderedHistory } from "./canon.js";
import { DIALECT_TARGETS, newThread, useFreshSaver } from "./graphs.js";

const State = Annotation.Root({
  n: Annotation<number>,
  trail: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

/** start → (left ∥ right) → sub (a subgraph that asks) → end. */
function buildGraph(checkpointer: BaseCheckpointSaver) {
  const sub = new StateGraph(State)
    .addNode("ask", (state) => ({ trail: [`asked ${interrupt<number, string>(state.n)}`] }))
    .addNode("tally", (state) => ({ n: state.n + state.trail.length }))
    .addEdge(START, "ask")
    .addEdge("ask", "tally")
    .addEdge("tally", END)
    .compile();
  return new StateGraph(State)
    .addNode("begin", (state) => ({ n: state.n + 1, trail: [`begin ${state.n}`] }))
    .addNode("left", (state) => ({ trail: [`left ${state.n}`] }))
    .addNode("right", (state) => ({ trail: [`right ${state.n}`] }))
    .addNode("sub", sub)
    .addNode("end", (state) => ({ trail: [`end ${state.n}`] }))
    .addEdge(START, "begin")
    .addEdge("begin", "left")
    .addEdge("begin", "right")
    .addEdge(["left", "right"], "sub")
    .addEdge("sub", "end")
    .addEdge("end", END)
    .compile({ checkpointer });
}

type Graph = ReturnType<typeof buildGraph>;

/** Anything whose history can be read (the graphs of this file differ in state). */
interface HistoryReader {
  getStateHistory(config: StateSnapshot["config"], options?: object): AsyncIterableIterator<StateSnapshot>;
}

async function query(graph: HistoryReader, config: StateSnapshot["config"], options: object) {
  return collect(graph.getStateHistory(config, options));
}

/** getStateHistory with each kind of option, alone and combined. */
async function queries(graph: Graph, config: StateSnapshot["config"], all: StateSnapshot[]) {
  const middle = all[Math.floor(all.length / 2)].config;
  const results = {
    updates: await query(graph, config, { filter: { source: "update" } }),
    stepTwo: await query(graph, config, { filter: { step: 2 } }),
    loopStepOne: await query(graph, config, { filter: { source: "loop", step: 1 } }),
    byRunMetadata: await query(graph, config, { filter: { user: "ann" } }),
    byTwoKeys: await query(graph, config, { filter: { source: "update", step: 2 } }),
    nothing: await query(graph, config, { filter: { source: "nonesuch" } }),
    firstThree: await query(graph, config, { limit: 3 }),
    beforeMiddle: await query(graph, config, { before: middle }),
    beforeMiddleTwo: await query(graph, config, { before: middle, limit: 2 }),
    loopsBeforeMiddle: await query(graph, config, { before: middle, filter: { source: "loop" }, limit: 4 }),
  };
  for (const result of Object.values(results)) checkOrder(result, false);
  return results;
}

async function runHistory(checkpointer: BaseCheckpointSaver) {
  const graph = buildGraph(checkpointer);
  const config = newThread("history");
  // Run metadata is not stored (LangGraph 1.7 keeps source, step and parents only), but must not disturb.
  const run = { ...config, metadata: { user: "ann" } };
  const first = await graph.invoke({ n: 1, trail: ["input"] }, run);
  const paused = await graph.getState(config, { subgraphs: true });
  // Edit the paused subgraph's own state, then resume it.
  const subConfig = (paused.tasks[0].state as StateSnapshot).config;
  const subEdit = await graph.updateState(subConfig, { trail: ["edited in sub"] }, "ask");
  const subEdited = await graph.getState(config, { subgraphs: true });
  const resumed = await graph.invoke(new Command({ resume: "yes" }), run);
  const original = await orderedHistory(graph, config);

  // Fork at the parallel step as if only "left" had run, and run on from there.
  const parallel = original.find((s) => s.next.includes("left") && s.next.includes("right"));
  if (parallel === undefined) throw new Error("no parallel step");
  const asLeft = await graph.updateState(parallel.config, { trail: ["left by hand"] }, "left");
  const asLeftState = await graph.getState(asLeft);
  const asLeftRun = await graph.invoke(null, asLeft);
  const asLeftResumed = await graph.invoke(new Command({ resume: "fork" }), config);

  // A copy of the first checkpoint, then several supersteps at once from it.
  const oldest = original[original.length - 1];
  const copied = await graph.updateState(oldest.config, undefined, "__copy__");
  const bulk = await graph.bulkUpdateState(copied, [
    { updates: [{ values: { n: 10, trail: ["bulk begin"] }, asNode: "begin" }] },
    {
      updates: [
        { values: { trail: ["bulk left"] }, asNode: "left" },
        { values: { trail: ["bulk right"] }, asNode: "right" },
      ],
    },
  ]);
  const bulkState = await graph.getState(bulk);
  const bulkRun = await graph.invoke(null, bulk);
  const bulkResumed = await graph.invoke(new Command({ resume: "bulk" }), config);

  const all = await orderedHistory(graph, config);
  // A thread never written: an empty state and no history.
  const unknown = { configurable: { thread_id: `${config.configurable.thread_id}-unknown` } };
  const empty = { state: await graph.getState(unknown), history: await collect(graph.getStateHistory(unknown)) };
  const subHistory = await orderedHistory(graph, {
    configurable: { thread_id: config.configurable.thread_id, checkpoint_ns: subConfig.configurable?.checkpoint_ns },
  });
  // An object filter value matches JSON-equal metadata (docs/queries-and-filters.md); MemorySaver
  // compares with ===, so it never matches there: compared with the whole history, not with MemorySaver.
  const byObject = await query(graph, config, { filter: { parents: {} } });
  const result = canonRun(
    {
      all,
      empty,
      subHistory,
      queries: await queries(graph, config, all),
      first,
      paused,
      subEdit,
      subEdited,
      resumed,
      asLeft,
      asLeftState,
      asLeftRun,
      asLeftResumed,
      copied,
      bulk,
      bulkState,
      bulkRun,
      bulkResumed,
    },
    { [config.configurable.thread_id]: "<thread>", [unknown.configurable.thread_id]: "<unknown thread>" },
  );
  return { result, objectMatches: byObject.length, total: all.length };
}

/** A node that loops `rounds` times: a long history, read in pieces across the saver's pages. */
async function runLongThread(checkpointer: BaseCheckpointSaver, rounds: number) {
  const Long = Annotation.Root({
    i: Annotation<number>,
    log: new DeltaChannel<string[], string>((state, writes) => state.concat(writes), { snapshotFrequency: 40 }),
  });
  const graph = new StateGraph(Long)
    .addNode("tick", (state) => ({ i: (state.i ?? 0) + 1, log: `tick ${state.i ?? 0}` }))
    .addEdge(START, "tick")
    .addConditionalEdges("tick", (state) => (state.i < rounds ? "tick" : END), ["tick", END])
    .compile({ checkpointer });
  const config = newThread("long");
  await graph.invoke({ i: 0 }, { ...config, recursionLimit: rounds + 10 });
  const all = await orderedHistory(graph, config);
  const pieces: Record<string, StateSnapshot[]> = {};
  for (const at of [1, 9, 10, 11, 49, 50, 51, all.length - 2]) {
    pieces[`before ${at}`] = await query(graph, config, { before: all[at].config, limit: 12 });
    pieces[`state ${at}`] = [await graph.getState(all[at].config)];
  }
  pieces.loopsOnly = await query(graph, config, { filter: { source: "loop" }, limit: 75 });
  for (const piece of Object.values(pieces)) checkOrder(piece, false);
  return canonRun({ all, pieces }, { [config.configurable.thread_id]: "<thread>" });
}

describe.each(DIALECT_TARGETS)("editing and querying history on %s", (target) => {
  const db = useFreshSaver(target);

  it("forks with updateState (asNode, __copy__, bulk, in a subgraph) and filters history like MemorySaver", async () => {
    const { result: drizzle, objectMatches, total } = await runHistory(db.saver);
    const { result: memory } = await runHistory(new MemorySaver());
    expect(drizzle).toEqual(memory);
    expect(objectMatches).toBe(total);
    const found = drizzle.queries as Record<string, unknown[]>;
    expect(found.updates.length).toBeGreaterThan(0);
    expect(found.byRunMetadata).toEqual([]);
    expect(found.byTwoKeys).toHaveLength(2);
    expect(found.nothing).toEqual([]);
    expect(found.firstThree).toHaveLength(3);
    expect(found.beforeMiddleTwo).toHaveLength(2);
  });

  it("reads a long thread's history in pieces (before, limit, filter) like MemorySaver", async () => {
    const drizzle = await runLongThread(db.saver, 120);
    const memory = await runLongThread(new MemorySaver(), 120);
    expect(drizzle).toEqual(memory);
    expect((drizzle.all as unknown[]).length).toBe(122);
  });
});
