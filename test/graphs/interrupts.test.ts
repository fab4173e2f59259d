import type { RunnableConfig } from "@langchain/core/runnables";
import {
  type BaseCheckpointSaver,
  Command,
  isInterrupted,
  MemorySaver,
  type StateSnapshot,
} from "@langchain/langgraph";
import {
  buildApprovalGraph,
  buildFormGraph,
  buildNestedGraph,
  buildTripGraph,
  GRAPH_TARGETS,
  history,
  newThread,
  normalHistory,
  normalize,
  normalSnapshot,
  useFreshSaver,
} from "./graphs.js";

async function runApproval(checkpointer: BaseCheckpointSaver) {
  const counter = { review: 0 };
  const graph = buildApprovalGraph(checkpointer, counter);
  const config = newThread("approval");
  const first = await graph.invoke({ request: "the post" }, config);
  const paused = await graph.getState(config);
  const pausedHistory = await normalHistory(graph, config);
  const reviewsBeforeResume = counter.review;
  const resumed = await graph.invoke(new Command({ resume: { approved: true, note: "lgtm" } }), config);
  const done = await graph.getState(config);
  return {
    first,
    paused,
    pausedHistory,
    reviewsBeforeResume,
    resumed,
    done,
    history: await normalHistory(graph, config),
    counter,
  };
}

function subgraphState(snapshot: StateSnapshot): StateSnapshot {
  const state = snapshot.tasks[0]?.state;
  if (state === undefined || !("values" in state)) throw new Error("expected the subgraph's state snapshot");
  return state as StateSnapshot;
}

function namespaceOf(config: RunnableConfig): string {
  const ns = config.configurable?.checkpoint_ns;
  if (typeof ns !== "string") throw new Error("expected a checkpoint namespace");
  return ns;
}

async function runTrip(checkpointer: BaseCheckpointSaver) {
  const counter = { confirm: 0 };
  const graph = buildTripGraph(checkpointer, counter);
  const config = newThread("trip");
  const first = await graph.invoke({ destination: "Oslo" }, config);
  const paused = await graph.getState(config, { subgraphs: true });
  const pausedFlat = await graph.getState(config);
  const sub = subgraphState(paused);
  const ns = namespaceOf(sub.config);
  const subConfig = { configurable: { thread_id: config.configurable.thread_id, checkpoint_ns: ns } };
  const subHistory = await normalHistory(graph, subConfig);
  const subDirect = await graph.getState(sub.config);
  const resumed = await graph.invoke(new Command({ resume: "12A" }), config);
  const subHistoryAfter = await normalHistory(graph, subConfig);
  const done = await graph.getState(config, { subgraphs: true });
  return {
    graph,
    config,
    first,
    paused,
    pausedFlat,
    sub,
    ns,
    subHistory,
    subDirect,
    subHistoryAfter,
    resumed,
    done,
    history: await normalHistory(graph, config),
    counter,
  };
}

async function runNested(checkpointer: BaseCheckpointSaver) {
  const graph = buildNestedGraph(checkpointer);
  const config = newThread("nested");
  const first = await graph.invoke({}, config);
  const paused = await graph.getState(config, { subgraphs: true });
  const middle = subgraphState(paused);
  const inner = subgraphState(middle);
  const innerHistory = await normalHistory(graph, {
    configurable: { thread_id: config.configurable.thread_id, checkpoint_ns: namespaceOf(inner.config) },
  });
  const result = await graph.invoke(new Command({ resume: "yes" }), config);
  return {
    first,
    paused,
    middleNs: namespaceOf(middle.config),
    innerNs: namespaceOf(inner.config),
    innerHistory,
    result,
    history: await normalHistory(graph, config),
  };
}

async function runForm(checkpointer: BaseCheckpointSaver) {
  const counter = { ask: 0 };
  const graph = buildFormGraph(checkpointer, counter);
  const config = newThread("form");
  const steps = [await graph.invoke({}, config)];
  const states = [await graph.getState(config)];
  steps.push(await graph.invoke(new Command({ resume: "Ann" }), config));
  states.push(await graph.getState(config));
  steps.push(await graph.invoke(new Command({ resume: 41 }), config));
  states.push(await graph.getState(config));
  return { steps, states, counter, history: await normalHistory(graph, config) };
}

describe.each(GRAPH_TARGETS)("interrupts on %s", (dialect) => {
  const db = useFreshSaver(dialect);

  it("pauses at interrupt() and resumes with Command({ resume }) like MemorySaver", async () => {
    const drizzle = await runApproval(db.saver);
    const memory = await runApproval(new MemorySaver());

    const question = { question: "approve the post?", draft: ["drafted the post"] };
    expect(normalize(drizzle.first)).toEqual({
      request: "the post",
      log: ["drafted the post"],
      __interrupt__: [{ value: question }],
    });

    // Before resuming: the review task waits with its interrupt.
    expect(drizzle.paused.next).toEqual(["review"]);
    expect(drizzle.paused.tasks).toHaveLength(1);
    expect(drizzle.paused.tasks[0].name).toBe("review");
    expect(drizzle.paused.tasks[0].interrupts).toHaveLength(1);
    expect(drizzle.paused.tasks[0].interrupts[0].value).toEqual(question);
    if (!isInterrupted(drizzle.first)) throw new Error("expected the first run to stop at an interrupt");
    expect(drizzle.paused.tasks[0].interrupts[0].id).toBe(drizzle.first.__interrupt__[0].id);
    expect(typeof drizzle.paused.tasks[0].interrupts[0].id).toBe("string");
    expect(normalSnapshot(drizzle.paused)).toEqual(normalSnapshot(memory.paused));
    expect(drizzle.pausedHistory).toEqual(memory.pausedHistory);

    // After resuming: the node ran again with the answer and the graph finished.
    const final = {
      request: "the post",
      decision: "approved: lgtm",
      log: ["drafted the post", "reviewed", "published (approved: lgtm)"],
    };
    expect(normalize(drizzle.resumed)).toEqual(final);
    expect(drizzle.done.values).toEqual(final);
    expect(drizzle.done.next).toEqual([]);
    expect(drizzle.done.tasks).toEqual([]);
    expect(drizzle.reviewsBeforeResume).toBe(1);
    expect(drizzle.counter).toEqual({ review: 2 });
    expect(drizzle.counter).toEqual(memory.counter);

    expect(normalize(drizzle.resumed)).toEqual(normalize(memory.resumed));
    expect(normalSnapshot(drizzle.done)).toEqual(normalSnapshot(memory.done));
    expect(drizzle.history).toEqual(memory.history);
    expect(drizzle.history.map((s) => [s.source, s.step, s.next])).toEqual([
      ["loop", 3, []],
      ["loop", 2, ["publish"]],
      ["loop", 1, ["review"]],
      ["loop", 0, ["draft"]],
      ["input", -1, ["__start__"]],
    ]);
  });

  it("resumes a rejected answer on its own thread", async () => {
    const counter = { review: 0 };
    const graph = buildApprovalGraph(db.saver, counter);
    const approved = newThread("approval-a");
    const rejected = newThread("approval-r");
    await graph.invoke({ request: "A" }, approved);
    await graph.invoke({ request: "R" }, rejected);
    await graph.invoke(new Command({ resume: { approved: false, note: "" } }), rejected);
    expect((await graph.getState(rejected)).values.decision).toBe("rejected");
    // The other thread still waits for its own answer.
    const waiting = await graph.getState(approved);
    expect(waiting.next).toEqual(["review"]);
    expect(waiting.tasks[0].interrupts[0].value).toEqual({ question: "approve A?", draft: ["drafted A"] });
    await graph.invoke(new Command({ resume: { approved: true, note: "ok" } }), approved);
    expect((await graph.getState(approved)).values.log).toEqual(["drafted A", "reviewed", "published (approved: ok)"]);
  });

  it("shows an interrupted subgraph's state under its namespace, then resumes it like MemorySaver", async () => {
    const drizzle = await runTrip(db.saver);
    const memory = await runTrip(new MemorySaver());

    const question = { destination: "Oslo", quotes: ["quote for Oslo"] };
    expect(normalize(drizzle.first)).toEqual({
      destination: "Oslo",
      steps: ["plan Oslo"],
      __interrupt__: [{ value: question }],
    });

    // The parent waits in its "book" task, which holds the subgraph's own state.
    expect(drizzle.paused.values).toEqual({ destination: "Oslo", steps: ["plan Oslo"] });
    expect(drizzle.paused.next).toEqual(["book"]);
    expect(drizzle.paused.tasks.map((t) => t.name)).toEqual(["book"]);
    expect(drizzle.paused.tasks[0].interrupts.map((i) => i.value)).toEqual([question]);
    expect(drizzle.ns).toMatch(/^book:/);
    expect(drizzle.sub.values).toEqual({ destination: "Oslo", booking: ["quote for Oslo"] });
    expect(drizzle.sub.next).toEqual(["confirm"]);
    expect(drizzle.sub.tasks.map((t) => t.name)).toEqual(["confirm"]);
    expect(drizzle.sub.tasks[0].interrupts.map((i) => i.value)).toEqual([question]);
    // Without subgraphs: true the task carries only the subgraph's config.
    const flatState = drizzle.pausedFlat.tasks[0].state;
    expect(flatState === undefined || !("values" in flatState)).toBe(true);

    // The saver really stored checkpoints under the subgraph's namespace.
    const threadId = drizzle.config.configurable.thread_id;
    const stored = [];
    for await (const tuple of db.saver.list({ configurable: { thread_id: threadId, checkpoint_ns: drizzle.ns } }))
      stored.push(tuple);
    expect(stored.length).toBe(drizzle.subHistoryAfter.length);
    expect(stored.length).toBe(5);
    expect(stored.every((t) => t.config.configurable?.checkpoint_ns === drizzle.ns)).toBe(true);
    // Reading the subgraph's checkpoint directly by its config gives the same state.
    expect(normalSnapshot(drizzle.subDirect)).toEqual(normalSnapshot(drizzle.sub));
    expect(normalSnapshot(drizzle.subDirect)).toEqual(normalSnapshot(memory.subDirect));

    expect(normalSnapshot(drizzle.paused)).toEqual(normalSnapshot(memory.paused));
    expect(normalSnapshot(drizzle.pausedFlat)).toEqual(normalSnapshot(memory.pausedFlat));
    expect(drizzle.subHistory).toEqual(memory.subHistory);
    expect(drizzle.subHistory.map((s) => [s.source, s.step, s.next])).toEqual([
      ["loop", 1, ["confirm"]],
      ["loop", 0, ["quote"]],
      ["input", -1, ["__start__"]],
    ]);

    // Resumed: the subgraph finished with the answer, then the parent did.
    const final = {
      destination: "Oslo",
      steps: ["plan Oslo", "done: quote for Oslo; seat 12A confirmed; ticket #2 issued"],
      booking: ["quote for Oslo", "seat 12A confirmed", "ticket #2 issued"],
    };
    expect(drizzle.resumed).toEqual(final);
    expect(drizzle.done.values).toEqual(final);
    expect(drizzle.done.next).toEqual([]);
    expect(drizzle.done.tasks).toEqual([]);
    expect(drizzle.counter).toEqual({ confirm: 2 });
    expect(drizzle.counter).toEqual(memory.counter);
    expect(normalize(drizzle.resumed)).toEqual(normalize(memory.resumed));
    expect(normalSnapshot(drizzle.done)).toEqual(normalSnapshot(memory.done));
    expect(drizzle.history).toEqual(memory.history);
    expect(drizzle.subHistoryAfter).toEqual(memory.subHistoryAfter);
    expect(drizzle.subHistoryAfter.map((s) => [s.source, s.step, s.next])).toEqual([
      ["loop", 3, []],
      ["loop", 2, ["ticket"]],
      ["loop", 1, ["confirm"]],
      ["loop", 0, ["quote"]],
      ["input", -1, ["__start__"]],
    ]);

    // History snapshots of the parent never carry the subgraph's namespace.
    for (const snapshot of await history(drizzle.graph, drizzle.config)) {
      expect(snapshot.config.configurable?.checkpoint_ns ?? "").toBe("");
    }
  });

  it("pauses in a subgraph of a subgraph (nested namespaces) and resumes like MemorySaver", async () => {
    const drizzle = await runNested(db.saver);
    const memory = await runNested(new MemorySaver());

    expect(normalize(drizzle.first)).toEqual({ path: ["outer"], __interrupt__: [{ value: "depth 2 after 2" }] });
    expect(drizzle.middleNs).toMatch(/^middle:[^|]+$/);
    expect(drizzle.innerNs.startsWith(`${drizzle.middleNs}|inner:`)).toBe(true);
    const top = normalSnapshot(drizzle.paused);
    expect(top.tasks[0].subgraph?.values).toEqual({ path: ["outer", "middle in"] });
    expect(top.tasks[0].subgraph?.tasks[0].subgraph?.next).toEqual(["ask"]);
    expect(top.tasks[0].subgraph?.tasks[0].subgraph?.tasks[0].interrupts).toEqual([{ value: "depth 2 after 2" }]);
    expect(top).toEqual(normalSnapshot(memory.paused));
    expect(drizzle.innerHistory).toEqual(memory.innerHistory);
    expect(drizzle.innerHistory.length).toBeGreaterThan(0);

    expect(drizzle.result).toEqual({
      log: ["finished with 6 entries"],
      path: ["outer", "middle in", "outer", "middle in", "inner got yes", "middle out at 5"],
    });
    expect(drizzle.result).toEqual(memory.result);
    expect(drizzle.history).toEqual(memory.history);
  });

  it("resumes a node that interrupts twice, answer by answer, like MemorySaver", async () => {
    const drizzle = await runForm(db.saver);
    const memory = await runForm(new MemorySaver());

    expect(drizzle.steps.map(normalize)).toEqual([
      { __interrupt__: [{ value: "name?" }] },
      { __interrupt__: [{ value: "age of Ann?" }] },
      { name: "Ann", age: 41, greeting: "hello Ann, 41" },
    ]);
    expect(drizzle.states.map((s) => s.tasks.map((t) => t.interrupts.map((i) => i.value)))).toEqual([
      [["name?"]],
      [["age of Ann?"]],
      [],
    ]);
    // The node ran once per answer: it replays the answers it already has.
    expect(drizzle.counter).toEqual({ ask: 3 });
    expect(drizzle.steps.map(normalize)).toEqual(memory.steps.map(normalize));
    expect(drizzle.states.map(normalSnapshot)).toEqual(memory.states.map(normalSnapshot));
    expect(drizzle.counter).toEqual(memory.counter);
    expect(drizzle.history).toEqual(memory.history);
  });

  it("lets the state be edited while paused, then resumes on the edited state like MemorySaver", async () => {
    const run = async (checkpointer: BaseCheckpointSaver) => {
      const counter = { review: 0 };
      const graph = buildApprovalGraph(checkpointer, counter);
      const config = newThread("edit-while-paused");
      await graph.invoke({ request: "v1" }, config);
      const edited = await graph.updateState(config, { request: "v2", log: ["edited"] });
      const afterEdit = await graph.getState(config);
      const result = await graph.invoke(new Command({ resume: { approved: true, note: "second look" } }), config);
      return { edited, afterEdit, result, counter, history: await normalHistory(graph, config) };
    };
    const drizzle = await run(db.saver);
    const memory = await run(new MemorySaver());

    expect(drizzle.afterEdit.values).toEqual({ request: "v2", log: ["drafted v1", "edited"] });
    expect(drizzle.afterEdit.next).toEqual(["review"]);
    expect(drizzle.afterEdit.metadata?.source).toBe("update");
    expect(normalSnapshot(drizzle.afterEdit)).toEqual(normalSnapshot(memory.afterEdit));
    expect(drizzle.result).toEqual(memory.result);
    expect(drizzle.counter).toEqual(memory.counter);
    expect(drizzle.history).toEqual(memory.history);
  });
});
