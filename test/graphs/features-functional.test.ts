/**
 * LangGraph's functional API and retries, run on each dialect (plain and encrypted)
 * and on MemorySaver, every observable compared in canonical form (canon.ts):
 * entrypoint and task with interrupt and resume, getPreviousState and
 * entrypoint.final across turns; a task that fails after its parallel sibling
 * succeeded (the sibling's result is reused, not recomputed); RetryPolicy on tasks and
 * on graph nodes.
 */

import {
  Annotation,
  type BaseCheckpointSaver,
  Command,
  END,
  entrypoint,
  getPreviousState,
  interrupt,
  MemorySaver,
  START,
  StateGraph,
  task,
} from "@langchain/langgraph";
import { canonRun, collect, orderedHistory, STREAM_MODES } from "./canon.js";
import { DIALECT_TARGETS, newThread, useFreshSaver } from "./graphs.js";

const STREAM = { streamMode: STREAM_MODES };
// Retries without waiting: the test is about what is saved, not about back-off.
const QUICK_RETRY = { maxAttempts: 3, initialInterval: 1, backoffFactor: 1, jitter: false, logWarning: false };

interface Counter {
  double: number;
  steady: number;
  flaky: number;
  flakyFailures: number;
}

interface Saved {
  total: number;
  turns: number;
}

function buildWorkflow(checkpointer: BaseCheckpointSaver, counter: Counter) {
  const double = task("double", async (n: number) => {
    counter.double += 1;
    return n * 2;
  });
  const steady = task("steady", async (n: number) => {
    counter.steady += 1;
    return `steady ${n}`;
  });
  const flaky = task("flaky", async (n: number) => {
    counter.flaky += 1;
    // Let the sibling finish first, so its result is saved before the failure.
    await new Promise((resolve) => setTimeout(resolve, 20));
    if (counter.flakyFailures > 0) {
      counter.flakyFailures -= 1;
      throw new Error(`flaky failed on ${n}`);
    }
    return `flaky ${n}`;
  });
  return entrypoint({ name: "workflow", checkpointer }, async (input: { n: number }) => {
    const previous = getPreviousState<Saved>();
    const [a, b] = await Promise.all([double(input.n), double(input.n + 1)]);
    const [s, f] = await Promise.all([steady(input.n), flaky(input.n)]);
    const answer = interrupt<{ question: string; seen: Saved | null }, string>({
      question: `keep ${a + b}?`,
      seen: previous ?? null,
    });
    const total = (previous?.total ?? 0) + (answer === "yes" ? a + b : 0);
    const turns = (previous?.turns ?? 0) + 1;
    return entrypoint.final({ value: { total, answer, parts: [s, f] }, save: { total, turns } });
  });
}

async function runWorkflow(checkpointer: BaseCheckpointSaver) {
  const counter: Counter = { double: 0, steady: 0, flaky: 0, flakyFailures: 1 };
  const workflow = buildWorkflow(checkpointer, counter);
  const config = newThread("workflow");
  const failure = await workflow.invoke({ n: 1 }, config).then(
    () => undefined,
    (error: unknown) => error,
  );
  const afterFailure = { ...counter };
  const failed = await workflow.getState(config);
  // Retried with no input: the tasks that succeeded are not run again.
  const first = await collect(workflow.stream(null, { ...config, ...STREAM }));
  const afterRetry = { ...counter };
  const paused = await workflow.getState(config);
  const resumed = await collect(workflow.stream(new Command({ resume: "yes" }), { ...config, ...STREAM }));
  const turnOne = await workflow.getState(config);
  const second = await workflow.invoke({ n: 5 }, config);
  const secondPaused = await workflow.getState(config);
  const secondDone = await workflow.invoke(new Command({ resume: "no" }), config);
  const fullHistory = await orderedHistory(workflow, config);
  return canonRun(
    {
      failure,
      afterFailure,
      failed,
      afterRetry,
      paused,
      turnOne,
      second,
      secondPaused,
      secondDone,
      fullHistory,
      first,
      resumed,
      counter,
    },
    { [config.configurable.thread_id]: "<thread>" },
  );
}

const RetryState = Annotation.Root({
  input: Annotation<string>,
  outputs: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

/** Two parallel nodes; "shaky" fails twice, then succeeds on its RetryPolicy's third attempt. */
function buildRetryGraph(checkpointer: BaseCheckpointSaver, counter: { steady: number; shaky: number }) {
  return new StateGraph(RetryState)
    .addNode("steady", (state) => {
      counter.steady += 1;
      return { outputs: [`steady ${state.input}`] };
    })
    .addNode(
      "shaky",
      async (state) => {
        counter.shaky += 1;
        await new Promise((resolve) => setTimeout(resolve, 10));
        if (counter.shaky < 3) throw new Error(`shaky attempt ${counter.shaky}`);
        return { outputs: [`shaky ${state.input} after ${counter.shaky}`] };
      },
      { retryPolicy: QUICK_RETRY },
    )
    .addNode("join", (state) => ({ outputs: [`joined ${[...state.outputs].sort().join(" + ")}`] }))
    .addEdge(START, "steady")
    .addEdge(START, "shaky")
    .addEdge(["steady", "shaky"], "join")
    .addEdge("join", END)
    .compile({ checkpointer });
}

async function runRetry(checkpointer: BaseCheckpointSaver) {
  const counter = { steady: 0, shaky: 0 };
  const graph = buildRetryGraph(checkpointer, counter);
  const config = newThread("retry");
  const chunks = await collect(graph.stream({ input: "x" }, { ...config, ...STREAM }));
  const state = await graph.getState(config);
  const fullHistory = await orderedHistory(graph, config);
  return canonRun({ state, fullHistory, chunks, counter }, { [config.configurable.thread_id]: "<thread>" });
}

interface SubCounter {
  inner: number;
  innerFailures: number;
  flaky: number;
  flakyFailures: number;
}

/** Resolves once both subgraph nodes have returned: a failed run aborts its siblings still running. */
function finishLine() {
  const releases: Record<string, () => void> = {};
  const wait = (name: string) =>
    new Promise<void>((resolve) => {
      releases[name] = resolve;
    });
  const both = Promise.all([wait("steady"), wait("shaky")]);
  return { both, release: (name: string) => releases[name]() };
}

/**
 * Two parallel subgraphs: "steady" completes, "shaky" fails inside on its second step
 * once and is retried whole by its RetryPolicy; once both are done "flaky" fails once
 * with no policy, so the run fails and is resumed.
 */
function buildSubgraphRetryGraph(checkpointer: BaseCheckpointSaver, counter: SubCounter) {
  // Both subgraphs hand their whole state back, input included: the last write wins.
  const SubState = Annotation.Root({
    input: Annotation<string>({ reducer: (_, b) => b, default: () => "" }),
    outputs: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  });
  const line = finishLine();
  const inner = (name: string, fails: boolean) => {
    const graph = new StateGraph(SubState)
      .addNode("first", (state) => {
        counter.inner += 1;
        return { outputs: [`${name} first ${state.input}`] };
      })
      .addNode("second", () => {
        if (fails && counter.innerFailures > 0) {
          counter.innerFailures -= 1;
          throw new Error(`${name} second failed`);
        }
        return { outputs: [`${name} second`] };
      })
      .addEdge(START, "first")
      .addEdge("first", "second")
      .addEdge("second", END)
      .compile();
    return async (state: typeof SubState.State) => {
      const result = await graph.invoke(state);
      line.release(name);
      return result;
    };
  };
  return new StateGraph(SubState)
    .addNode("steady", inner("steady", false))
    .addNode("shaky", inner("shaky", true), { retryPolicy: QUICK_RETRY })
    .addNode("flaky", async () => {
      counter.flaky += 1;
      await line.both;
      await new Promise((resolve) => setTimeout(resolve, 20));
      if (counter.flakyFailures > 0) {
        counter.flakyFailures -= 1;
        throw new Error("flaky failed");
      }
      return { outputs: ["flaky"] };
    })
    .addNode("join", (state) => ({ outputs: [`joined ${state.outputs.length}`] }))
    .addEdge(START, "steady")
    .addEdge(START, "shaky")
    .addEdge(START, "flaky")
    .addEdge(["steady", "shaky", "flaky"], "join")
    .addEdge("join", END)
    .compile({ checkpointer });
}

async function runSubgraphRetry(checkpointer: BaseCheckpointSaver) {
  const counter: SubCounter = { inner: 0, innerFailures: 1, flaky: 0, flakyFailures: 1 };
  const graph = buildSubgraphRetryGraph(checkpointer, counter);
  const config = newThread("subgraph-retry");
  const failure = await graph.invoke({ input: "x" }, config).then(
    () => undefined,
    (error: unknown) => error,
  );
  const afterFailure = { ...counter };
  const failed = await graph.getState(config, { subgraphs: true });
  const result = await graph.invoke(null, config);
  const all = await orderedHistory(graph, config);
  return canonRun(
    { failure, afterFailure, failed, result, all, counter },
    { [config.configurable.thread_id]: "<thread>" },
  );
}

describe.each(DIALECT_TARGETS)("the functional API and retries on %s", (target) => {
  const db = useFreshSaver(target);

  it("runs entrypoint/task with a failure, an interrupt and a second turn like MemorySaver", async () => {
    const drizzle = await runWorkflow(db.saver);
    const memory = await runWorkflow(new MemorySaver());
    expect(drizzle).toEqual(memory);
    // The doubled numbers and the steady task ran once each, the flaky task twice.
    expect(drizzle.afterRetry).toEqual({ double: 2, steady: 1, flaky: 2, flakyFailures: 0 });
    expect(drizzle.secondDone).toEqual({ total: 6, answer: "no", parts: ["steady 5", "flaky 5"] });
  });

  it("retries a node by its RetryPolicy, its parallel sibling running once, like MemorySaver", async () => {
    const drizzle = await runRetry(db.saver);
    const memory = await runRetry(new MemorySaver());
    expect(drizzle).toEqual(memory);
    expect(drizzle.counter).toEqual({ steady: 1, shaky: 3 });
  });

  it("resumes parallel subgraphs after a sibling failed, one retried by its policy, like MemorySaver", async () => {
    const drizzle = await runSubgraphRetry(db.saver);
    const memory = await runSubgraphRetry(new MemorySaver());
    expect(drizzle).toEqual(memory);
    const result = drizzle.result as { outputs: string[] };
    expect(result.outputs.at(-1)).toMatch(/^joined /);
    // "first" ran for steady, and twice for shaky: its retry starts the subgraph afresh (namespace "shaky:<id>|1").
    expect(drizzle.counter).toMatchObject({ inner: 3, innerFailures: 0, flaky: 2, flakyFailures: 0 });
  });
});
