/**
 * Several interrupts pending at once, resumed by interrupt id, run on each dialect
 * (plain and encrypted) and on MemorySaver, every observable compared in canonical
 * form (canon.ts): Send workers that each interrupt (their packets must survive in the
 * checkpoint until every one is answered), and functional-API tasks that interrupt in
 * parallel (the entrypoint surfaces the first one; the other comes once it is answered).
 */

import {
  Annotation,
  type BaseCheckpointSaver,
  Command,
  END,
  entrypoint,
  interrupt,
  MemorySaver,
  Send,
  START,
  StateGraph,
  type StateSnapshot,
  task,
} from "@langchain/langgraph";
import { byNamespace, canonRun, collect, orderedHistory, STREAM_MODES } from "./canon.js";
import { DIALECT_TARGETS, newThread, useFreshSaver } from "./graphs.js";

/** Pending interrupts by their value, so each run answers the same questions. */
function pendingIds(snapshot: StateSnapshot): Map<string, string> {
  const ids = new Map<string, string>();
  for (const t of snapshot.tasks) {
    for (const pending of t.interrupts) if (pending.id !== undefined) ids.set(String(pending.value), pending.id);
  }
  return ids;
}

function answers(ids: Map<string, string>, questions: string[]): Record<string, string> {
  const map: Record<string, string> = {};
  for (const question of questions) {
    const id = ids.get(question);
    if (id === undefined) throw new Error(`no pending interrupt "${question}"`);
    map[id] = `answer to ${question}`;
  }
  return map;
}

function buildFanOut(checkpointer: BaseCheckpointSaver, counter: { asked: number }) {
  const State = Annotation.Root({
    topics: Annotation<string[]>,
    notes: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  });
  return new StateGraph(State)
    .addNode("plan", (state) => ({ notes: [`plan ${state.topics.length}`] }))
    .addNode(
      "ask",
      async (input: { topic: string }) => {
        counter.asked += 1;
        await new Promise((resolve) => setTimeout(resolve, input.topic.length * 10));
        return { notes: [`${input.topic}: ${interrupt<string, string>(`about ${input.topic}?`)}`] };
      },
      { input: Annotation.Root({ topic: Annotation<string> }) },
    )
    .addNode("sum", (state) => ({ notes: [`sum of ${state.notes.length}`] }))
    .addEdge(START, "plan")
    .addConditionalEdges("plan", (state) => state.topics.map((topic) => new Send("ask", { topic })), ["ask"])
    .addEdge("ask", "sum")
    .addEdge("sum", END)
    .compile({ checkpointer });
}

async function runFanOut(checkpointer: BaseCheckpointSaver) {
  const counter = { asked: 0 };
  const graph = buildFanOut(checkpointer, counter);
  const config = newThread("interrupt-fan-out");
  const options = { ...config, streamMode: STREAM_MODES };
  const first = await collect(graph.stream({ topics: ["a", "bb", "ccc"] }, options));
  const paused = await graph.getState(config);
  const partial = await collect(
    graph.stream(new Command({ resume: answers(pendingIds(paused), ["about bb?"]) }), options),
  );
  const half = await graph.getState(config);
  const rest = await collect(
    graph.stream(
      // Answered together with a state update, applied before the workers resume.
      new Command({ resume: answers(pendingIds(half), ["about a?", "about ccc?"]), update: { notes: ["by command"] } }),
      options,
    ),
  );
  const done = await graph.getState(config);
  const all = await orderedHistory(graph, config);
  return canonRun(
    {
      paused,
      half,
      done,
      all,
      first: byNamespace(first),
      partial: byNamespace(partial),
      rest: byNamespace(rest),
      counter,
    },
    { [config.configurable.thread_id]: "<thread>" },
  );
}

function buildWorkflow(checkpointer: BaseCheckpointSaver) {
  const confirm = task("confirm", async (what: string) => {
    await new Promise((resolve) => setTimeout(resolve, what.length * 10));
    return `${what} ${interrupt<string, string>(`confirm ${what}?`)}`;
  });
  return entrypoint({ name: "orders", checkpointer }, async (orders: string[]) => {
    const confirmed = await Promise.all(orders.map((order) => confirm(order)));
    return { confirmed };
  });
}

async function runWorkflow(checkpointer: BaseCheckpointSaver) {
  const workflow = buildWorkflow(checkpointer);
  const config = newThread("interrupt-tasks");
  const options = { ...config, streamMode: STREAM_MODES };
  const first = await collect(workflow.stream(["tea", "cake"], options));
  const paused = await workflow.getState(config);
  const partial = await collect(
    workflow.stream(new Command({ resume: answers(pendingIds(paused), ["confirm tea?"]) }), options),
  );
  const half = await workflow.getState(config);
  const rest = await workflow.invoke(new Command({ resume: answers(pendingIds(half), ["confirm cake?"]) }), config);
  const all = await orderedHistory(workflow, config);
  return canonRun(
    { paused, half, rest, all, first: byNamespace(first), partial: byNamespace(partial) },
    { [config.configurable.thread_id]: "<thread>" },
  );
}

/** Static breakpoints: before "draft" and after "check"; the state is edited at one. */
async function runBreakpoints(checkpointer: BaseCheckpointSaver) {
  const State = Annotation.Root({ text: Annotation<string>, checks: Annotation<number> });
  const graph = new StateGraph(State)
    .addNode("draft", (state) => ({ text: `${state.text} drafted` }))
    .addNode("check", (state) => ({ checks: (state.checks ?? 0) + 1 }))
    .addEdge(START, "draft")
    .addEdge("draft", "check")
    .addEdge("check", END)
    .compile({ checkpointer, interruptBefore: ["draft"], interruptAfter: ["check"] });
  const config = newThread("breakpoints");
  const options = { ...config, streamMode: STREAM_MODES };
  const first = await collect(graph.stream({ text: "memo" }, options));
  const atDraft = await graph.getState(config);
  await graph.updateState(config, { text: "memo v2" });
  const second = await collect(graph.stream(null, options));
  const afterCheck = await graph.getState(config);
  const third = await collect(graph.stream(null, options));
  const done = await graph.getState(config);
  return canonRun(
    { atDraft, afterCheck, done, all: await orderedHistory(graph, config), first, second, third },
    { [config.configurable.thread_id]: "<thread>" },
  );
}

describe.each(DIALECT_TARGETS)("several interrupts at once on %s", (target) => {
  const db = useFreshSaver(target);

  it("resumes Send workers' interrupts by id, some then the rest, like MemorySaver", async () => {
    const drizzle = await runFanOut(db.saver);
    const memory = await runFanOut(new MemorySaver());
    expect(drizzle).toEqual(memory);
    const done = drizzle.done as { values: { notes: string[] } };
    expect(done.values.notes).toEqual([
      "plan 3",
      "by command",
      "a: answer to about a?",
      "bb: answer to about bb?",
      "ccc: answer to about ccc?",
      "sum of 5",
    ]);
  });

  it("resumes parallel tasks' interrupts by id in the functional API like MemorySaver", async () => {
    const drizzle = await runWorkflow(db.saver);
    const memory = await runWorkflow(new MemorySaver());
    expect(drizzle).toEqual(memory);
    expect(drizzle.rest).toEqual({ confirmed: ["tea answer to confirm tea?", "cake answer to confirm cake?"] });
  });

  it("stops at static breakpoints and continues with null input like MemorySaver", async () => {
    const drizzle = await runBreakpoints(db.saver);
    const memory = await runBreakpoints(new MemorySaver());
    expect(drizzle).toEqual(memory);
    expect((drizzle.done as StateSnapshot).values).toEqual({ text: "memo v2 drafted", checks: 1 });
  });
});
