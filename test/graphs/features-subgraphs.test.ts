/**
 * LangGraph features around subgraphs and Command, run on each dialect (plain and
 * encrypted) and on MemorySaver, every observable compared in canonical form
 * (canon.ts): two subgraphs interrupting at once and resumed by interrupt id one at a
 * time, streamed with every stream mode and subgraphs: true; Command with goto,
 * update, Send and Command.PARENT.
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
  type StateSnapshot,
} from "@langchain/langgraph";
import { byNamespace, canonRun, collect, orderedHistory, STREAM_MODES } from "./canon.js";
import { DIALECT_TARGETS, newThread, useFreshSaver } from "./graphs.js";

const STREAM = { streamMode: STREAM_MODES, subgraphs: true };

const TripState = Annotation.Root({
  // Both parallel subgraphs hand the trip back: the last write wins.
  trip: Annotation<string>({ reducer: (_, b) => b, default: () => "" }),
  log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

/** A subgraph that quotes, asks which quote to take, and books it. */
function bookingGraph(kind: string, counter: Record<string, number>) {
  return new StateGraph(TripState)
    .addNode("quote", (state) => ({ log: [`${kind} quote for ${state.trip}`] }))
    .addNode("choose", () => {
      counter[kind] = (counter[kind] ?? 0) + 1;
      const choice = interrupt<{ kind: string }, string>({ kind });
      return { log: [`${kind} chose ${choice}`] };
    })
    .addNode("book", (state) => ({ log: [`${kind} booked after ${state.log.length}`] }))
    .addEdge(START, "quote")
    .addEdge("quote", "choose")
    .addEdge("choose", "book")
    .addEdge("book", END)
    .compile();
}

function buildTravelGraph(checkpointer: BaseCheckpointSaver, counter: Record<string, number>) {
  return new StateGraph(TripState)
    .addNode("plan", (state) => ({ log: [`plan ${state.trip}`] }))
    .addNode("flights", bookingGraph("flight", counter))
    .addNode("hotels", bookingGraph("hotel", counter))
    .addNode("summary", (state) => ({ log: [`summary of ${state.log.length}`] }))
    .addEdge(START, "plan")
    .addEdge("plan", "flights")
    .addEdge("plan", "hotels")
    .addEdge(["flights", "hotels"], "summary")
    .addEdge("summary", END)
    .compile({ checkpointer });
}

function interruptIdOf(snapshot: StateSnapshot, kind: string): string {
  for (const task of snapshot.tasks) {
    for (const pending of task.interrupts) {
      if ((pending.value as { kind?: string }).kind === kind && pending.id !== undefined) return pending.id;
    }
  }
  throw new Error(`no interrupt for ${kind}`);
}

async function subgraphHistories(graph: ReturnType<typeof buildTravelGraph>, paused: StateSnapshot) {
  const histories: Record<string, StateSnapshot[]> = {};
  for (const task of paused.tasks) {
    const state = task.state as StateSnapshot | undefined;
    const ns = state?.config.configurable?.checkpoint_ns;
    if (typeof ns !== "string") continue;
    histories[task.name] = await orderedHistory(graph, {
      configurable: { thread_id: paused.config.configurable?.thread_id, checkpoint_ns: ns },
    });
  }
  return histories;
}

async function runTravel(checkpointer: BaseCheckpointSaver) {
  const counter: Record<string, number> = {};
  const graph = buildTravelGraph(checkpointer, counter);
  const config = newThread("travel");
  const first = await collect(graph.stream({ trip: "Rome" }, { ...config, ...STREAM }));
  const paused = await graph.getState(config, { subgraphs: true });
  const pausedFlat = await graph.getState(config);
  const pausedSubHistories = await subgraphHistories(graph, paused);
  const hotelId = interruptIdOf(pausedFlat, "hotel");
  const second = await collect(
    graph.stream(new Command({ resume: { [hotelId]: "Hotel Roma" } }), { ...config, ...STREAM }),
  );
  const half = await graph.getState(config, { subgraphs: true });
  const flightId = interruptIdOf(half, "flight");
  const third = await collect(
    graph.stream(new Command({ resume: { [flightId]: "AZ 123" } }), { ...config, ...STREAM }),
  );
  const done = await graph.getState(config, { subgraphs: true });
  const fullHistory = await orderedHistory(graph, config);
  // Every past checkpoint read again with its subgraphs' states.
  const past = await Promise.all(fullHistory.map((s) => graph.getState(s.config, { subgraphs: true })));
  return canonRun(
    {
      paused,
      pausedFlat,
      pausedSubHistories,
      half,
      done,
      fullHistory,
      past,
      first: byNamespace(first),
      second: byNamespace(second),
      third: byNamespace(third),
      counter,
    },
    { [config.configurable.thread_id]: "<thread>" },
  );
}

const RouteState = Annotation.Root({
  topic: Annotation<string>,
  visits: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

function buildRouterGraph(checkpointer: BaseCheckpointSaver) {
  const escalate = new StateGraph(RouteState)
    .addNode("check", (state) =>
      state.topic === "urgent"
        ? new Command({ graph: Command.PARENT, goto: "human", update: { visits: ["escalated from sub"] } })
        : { visits: ["checked in sub"] },
    )
    .addEdge(START, "check")
    .addEdge("check", END)
    .compile();
  return new StateGraph(RouteState)
    .addNode(
      "route",
      (state) => new Command({ update: { visits: [`route ${state.topic}`] }, goto: ["left", "right"] }),
      {
        ends: ["left", "right"],
      },
    )
    .addNode(
      "left",
      () => new Command({ update: { visits: ["left"] }, goto: new Send("worker", { topic: "from left" }) }),
      {
        ends: ["worker"],
      },
    )
    .addNode("right", () => ({ visits: ["right"] }))
    .addNode("worker", (state) => ({ visits: [`worker ${state.topic}`] }))
    .addNode("escalate", escalate, { ends: ["human"] })
    .addNode("human", (state) => ({ visits: [`human saw ${state.visits.length}`] }))
    .addEdge(START, "route")
    .addEdge("right", "escalate")
    .addEdge("worker", END)
    .addEdge("escalate", END)
    .addEdge("human", END)
    .compile({ checkpointer });
}

async function runRouter(checkpointer: BaseCheckpointSaver) {
  const graph = buildRouterGraph(checkpointer);
  const config = newThread("router");
  const calm = await collect(graph.stream({ topic: "calm" }, { ...config, ...STREAM }));
  const calmState = await graph.getState(config);
  const urgent = await collect(graph.stream({ topic: "urgent" }, { ...config, ...STREAM }));
  // A Command as the input: update the state and jump to a node.
  const jumped = await graph.invoke(new Command({ update: { topic: "jump" }, goto: "human" }), config);
  const fullHistory = await orderedHistory(graph, config);
  return canonRun(
    {
      fullHistory,
      calmState,
      calm: byNamespace(calm),
      urgent: byNamespace(urgent),
      jumped,
    },
    { [config.configurable.thread_id]: "<thread>" },
  );
}

/** Node names, an answer and a thread id beyond ASCII (namespaces are built from node names). */
async function runUnicode(checkpointer: BaseCheckpointSaver) {
  const State = Annotation.Root({ log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });
  const inner = new StateGraph(State)
    .addNode("frågа 🐙", () => ({ log: [interrupt<string, string>("ünïcode?")] }))
    .addEdge(START, "frågа 🐙")
    .addEdge("frågа 🐙", END)
    .compile();
  const graph = new StateGraph(State)
    .addNode("bü ro 📎", inner)
    .addEdge(START, "bü ro 📎")
    .addEdge("bü ro 📎", END)
    .compile({ checkpointer });
  const threadId = `${newThread("unicode").configurable.thread_id} ñ 🧵 'quote" \\`;
  const config = { configurable: { thread_id: threadId } };
  await graph.invoke({}, config);
  const paused = await graph.getState(config, { subgraphs: true });
  const subConfig = (paused.tasks[0].state as StateSnapshot).config;
  const ns = subConfig.configurable?.checkpoint_ns;
  const subHistory = await orderedHistory(graph, { configurable: { thread_id: threadId, checkpoint_ns: ns } });
  // A history asked for from one checkpoint holds that checkpoint only.
  const fromOne = await collect(graph.getStateHistory(subConfig));
  await graph.invoke(new Command({ resume: "ja ✅" }), config);
  const all = await orderedHistory(graph, config);
  const done = await graph.getState(config, { subgraphs: true });
  return canonRun({ paused, subHistory, fromOne, all, done }, { [threadId]: "<thread>" });
}

describe.each(DIALECT_TARGETS)("subgraphs and Command on %s", (target) => {
  const db = useFreshSaver(target);

  it("resumes two interrupted subgraphs by interrupt id, one at a time, streaming like MemorySaver", async () => {
    const drizzle = await runTravel(db.saver);
    const memory = await runTravel(new MemorySaver());
    expect(drizzle).toEqual(memory);
    expect((drizzle.done as StateSnapshot).values).toMatchObject({
      trip: "Rome",
      log: expect.arrayContaining(["flight chose AZ 123", "hotel chose Hotel Roma"]),
    });
  });

  it("follows Command goto/update/Send and Command.PARENT like MemorySaver", async () => {
    const drizzle = await runRouter(db.saver);
    const memory = await runRouter(new MemorySaver());
    expect(drizzle).toEqual(memory);
  });

  it("keeps node names, answers and thread ids beyond ASCII like MemorySaver", async () => {
    const drizzle = await runUnicode(db.saver);
    const memory = await runUnicode(new MemorySaver());
    expect(drizzle).toEqual(memory);
    expect((drizzle.done as StateSnapshot).values).toEqual({ log: ["ja ✅"] });
    expect(drizzle.fromOne).toHaveLength(1);
  });
});
