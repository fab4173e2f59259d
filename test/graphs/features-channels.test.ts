/**
 * Channels of many kinds in one looping graph, run on each dialect (plain and
 * encrypted) and on MemorySaver, every observable compared in canonical form
 * (canon.ts): reducers (BinaryOperatorAggregate) with Overwrite, Topic (accumulating
 * and not), EphemeralValue, messages with RemoveMessage and REMOVE_ALL_MESSAGES,
 * DeltaChannel (state rebuilt from ancestor writes: parallel writers, snapshots,
 * forks), and a 1 MB message.
 */

import { AIMessage, type BaseMessage, HumanMessage, RemoveMessage } from "@langchain/core/messages";
import {
  Annotation,
  type BaseCheckpointSaver,
  Command,
  END,
  interrupt,
  MemorySaver,
  type Messages,
  messagesDeltaReducer,
  messagesStateReducer,
  Overwrite,
  REMOVE_ALL_MESSAGES,
  START,
  StateGraph,
  type StateSnapshot,
} from "@langchain/langgraph";
import { DeltaChannel, EphemeralValue, Topic } from "@langchain/langgraph/channels";
import { canonRun, collect, orderedHistory, STREAM_MODES } from "./canon.js";
import { DIALECT_TARGETS, newThread, useFreshSaver } from "./graphs.js";

const STREAM = { streamMode: STREAM_MODES };
const BIG = "0123456789abcdef".repeat(65_536); // 1 MiB

function concatAll(state: string[], writes: (string | string[])[]): string[] {
  return state.concat(writes.flat());
}

function channelState() {
  return Annotation.Root({
    round: Annotation<number>,
    total: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
    messages: Annotation<BaseMessage[], Messages>({ reducer: messagesStateReducer, default: () => [] }),
    log: new DeltaChannel<string[], string | string[]>(concatAll, { snapshotFrequency: 3 }),
    chat: new DeltaChannel<BaseMessage[], Messages>(messagesDeltaReducer, { snapshotFrequency: 2 }),
    events: new Topic<string>({ accumulate: true }),
    pings: new Topic<string>(),
    scratch: new EphemeralValue<string>(),
  });
}

function buildChannelGraph(checkpointer: BaseCheckpointSaver, counter: { ask: number }) {
  const State = channelState();
  return new StateGraph(State)
    .addNode("work", (state) => {
      const n = state.round ?? 0;
      const content = n === 2 ? BIG : `round ${n}`;
      return {
        round: n + 1,
        total: n,
        messages: [new AIMessage({ id: `ai-${n}`, content })],
        log: [`work ${n} saw ${(state.log ?? []).length}`],
        chat: [new HumanMessage({ id: `human-${n}`, content: `hi ${n}` })],
        events: [`work ${n}`],
        pings: `ping ${n}`,
        scratch: `scratch ${n} (before: ${state.scratch ?? "none"})`,
      };
    })
    .addNode("audit", (state) => ({
      total: 100,
      log: `audit saw ${(state.log ?? []).length}, pings ${JSON.stringify(state.pings)}`,
      events: [`audit ${state.round ?? 0}`],
    }))
    .addNode("prune", (state) => ({
      messages: [new RemoveMessage({ id: "ai-0" }), new RemoveMessage({ id: "ai-2" })],
      chat: [new RemoveMessage({ id: REMOVE_ALL_MESSAGES }), new HumanMessage({ id: "human-new", content: "fresh" })],
      log: new Overwrite([`pruned at ${state.log.length}`]),
      total: new Overwrite(state.total * 2),
    }))
    .addNode("ask", (state) => {
      counter.ask += 1;
      const answer = interrupt<{ log: string[]; events: string[]; chat: number }, string>({
        log: state.log,
        events: state.events,
        chat: state.chat.length,
      });
      return { log: [`answer ${answer}`], chat: [new AIMessage({ id: `answer-${answer}`, content: answer })] };
    })
    .addEdge(START, "work")
    .addEdge(START, "audit")
    .addConditionalEdges("work", (state) => (state.round < 4 ? ["work", "audit"] : ["prune"]), [
      "work",
      "audit",
      "prune",
    ])
    .addEdge("prune", "ask")
    .addEdge("ask", END)
    .compile({ checkpointer });
}

/** The state at every checkpoint of a history, read again by its config. */
async function statesOf(graph: ReturnType<typeof buildChannelGraph>, snapshots: StateSnapshot[]) {
  return Promise.all(snapshots.map(async (snapshot) => (await graph.getState(snapshot.config)).values));
}

async function runChannels(checkpointer: BaseCheckpointSaver) {
  const counter = { ask: 0 };
  const graph = buildChannelGraph(checkpointer, counter);
  const config = newThread("channels");
  const chunks = await collect(graph.stream({ round: 0 }, { ...config, ...STREAM }));
  const paused = await graph.getState(config);
  const resumed = await graph.invoke(new Command({ resume: "ok" }), config);
  const afterResume = await orderedHistory(graph, config);
  // Fork from the checkpoint where "work" is about to run for the third time.
  const forkPoint = afterResume.find((s) => s.values.round === 2 && s.next.includes("work"));
  if (forkPoint === undefined) throw new Error("no checkpoint before round 2");
  const forked = await graph.updateState(
    forkPoint.config,
    { log: ["edited"], chat: [new RemoveMessage({ id: "human-0" })], messages: [new RemoveMessage({ id: "ai-1" })] },
    "work",
  );
  const forkState = await graph.getState(forked);
  const forkChunks = await collect(graph.stream(null, { ...forked, ...STREAM }));
  const forkResumed = await graph.invoke(new Command({ resume: "fork" }), config);
  const fullHistory = await orderedHistory(graph, config);
  const everyState = await statesOf(graph, fullHistory);
  return canonRun(
    {
      paused,
      resumed,
      forkState,
      forkResumed,
      fullHistory,
      everyState,
      chunks,
      forkChunks,
      counter,
    },
    { [config.configurable.thread_id]: "<thread>" },
  );
}

/** 1 MiB in every place a graph writes: input, an interrupt's value, the answer, a task's pending result. */
async function runLargeWrites(checkpointer: BaseCheckpointSaver) {
  const State = Annotation.Root({
    doc: Annotation<string>,
    parts: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  });
  const counter = { big: 0, fails: 1 };
  const graph = new StateGraph(State)
    .addNode("big", (state) => {
      counter.big += 1;
      return { parts: [`${state.doc.slice(0, 8)}${BIG}`] };
    })
    .addNode("fails", async () => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      if (counter.fails-- > 0) throw new Error("fails once");
      return { parts: ["small"] };
    })
    .addNode("ask", (state) => ({ parts: [interrupt<string, string>(`${state.parts.length}${BIG}`).slice(-8)] }))
    .addEdge(START, "big")
    .addEdge(START, "fails")
    .addEdge(["big", "fails"], "ask")
    .addEdge("ask", END)
    .compile({ checkpointer });
  const config = newThread("large");
  const failure = await graph.invoke({ doc: `input ${BIG}` }, config).then(
    () => undefined,
    (error: unknown) => error,
  );
  const failed = await graph.getState(config);
  const paused = await graph.invoke(null, config);
  const done = await graph.invoke(new Command({ resume: `${BIG}answered` }), config);
  const all = await orderedHistory(graph, config);
  return canonRun({ failure, failed, paused, done, all, counter }, { [config.configurable.thread_id]: "<thread>" });
}

interface Todo {
  title: string;
  done: boolean;
}

/**
 * A node that changes an element of the list it was given in place and appends to it in
 * the same step (discouraged, but MemorySaver keeps the change): three turns, then the
 * state and the history. With asynchronous durability LangGraph may hand a checkpoint to
 * a saver after the next step changed its values (sooner to MemorySaver, which is
 * faster): there only the final state is compared.
 */
async function runInPlaceEdits(checkpointer: BaseCheckpointSaver, durability: "sync" | "async") {
  const State = Annotation.Root({
    todos: Annotation<Todo[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  });
  const graph = new StateGraph(State)
    .addNode("add", (state) => {
      if (state.todos.length > 0) state.todos[0].done = true;
      return { todos: [{ title: `t${state.todos.length}`, done: false }] };
    })
    .addEdge(START, "add")
    .addEdge("add", END)
    .compile({ checkpointer });
  const config = newThread("in-place");
  for (let turn = 0; turn < 3; turn++) await graph.invoke({ todos: [] }, { ...config, durability });
  const state = await graph.getState(config);
  const all = durability === "sync" ? await orderedHistory(graph, config) : [];
  return canonRun({ state, all }, { [config.configurable.thread_id]: "<thread>" });
}

describe.each(DIALECT_TARGETS)("channels of many kinds on %s", (target) => {
  const db = useFreshSaver(target);

  it("keeps reducer, topic, ephemeral, messages and delta channels like MemorySaver, through a fork", async () => {
    const drizzle = await runChannels(db.saver);
    const memory = await runChannels(new MemorySaver());
    expect(drizzle).toEqual(memory);
    const resumed = drizzle.resumed as Record<string, unknown>;
    expect(resumed.log).toEqual(["pruned at 8", "answer ok"]);
    expect(resumed.total).toBe(2 * (0 + 1 + 2 + 3 + 400));
  });

  it("keeps 1 MiB inputs, pending results, interrupt values and answers like MemorySaver", async () => {
    const drizzle = await runLargeWrites(db.saver);
    const memory = await runLargeWrites(new MemorySaver());
    expect(drizzle).toEqual(memory);
    expect(drizzle.counter).toEqual({ big: 1, fails: -1 });
    expect((drizzle.done as { parts: string[] }).parts.at(-1)).toBe("answered");
  });

  it.each(["sync", "async"] as const)(
    "keeps an element changed in place beside an append, like MemorySaver (durability %s)",
    async (durability) => {
      const drizzle = await runInPlaceEdits(db.saver, durability);
      expect(drizzle).toEqual(await runInPlaceEdits(new MemorySaver(), durability));
      const todos = (drizzle.state as { values: { todos: Todo[] } }).values.todos;
      expect(todos.map((todo) => todo.done)).toEqual([true, false, false]);
    },
  );
});
