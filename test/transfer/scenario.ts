import type { RunnableConfig } from "@langchain/core/runnables";
import { type BaseCheckpointSaver, Command, type StateSnapshot } from "@langchain/langgraph";
import { expect } from "vitest";
import {
  buildApprovalGraph,
  buildChatGraph,
  buildFanOutGraph,
  buildNestedGraph,
  buildPipelineGraph,
  buildTripGraph,
  CHAT_TURNS,
  history,
  newThread,
  normalize,
  normalSnapshot,
} from "../graphs/graphs.js";

/**
 * Threads written through a saver by real graphs: a multi-turn chat with a tool call,
 * an interrupt waiting for an answer, a pipeline forked by time travel, a subgraph
 * (namespaced checkpoints) stopped at an interrupt, nested subgraphs, and a fan-out
 * whose failed worker left the others' pending writes.
 */
export interface Scenario {
  chat: RunnableConfig;
  approval: RunnableConfig;
  forked: RunnableConfig;
  trip: RunnableConfig;
  nested: RunnableConfig;
  fanOut: RunnableConfig;
}

export const THREADS = ["chat", "approval", "forked", "trip", "nested", "fanOut"] as const;

/** The graph each thread ran, built over `saver` (counters are fresh each time). */
export function graphsOver(saver: BaseCheckpointSaver) {
  return {
    chat: buildChatGraph(saver),
    approval: buildApprovalGraph(saver, { review: 0 }),
    forked: buildPipelineGraph(saver),
    trip: buildTripGraph(saver, { confirm: 0 }),
    nested: buildNestedGraph(saver),
    fanOut: buildFanOutGraph(saver, { worker: 0 }),
  };
}

export async function writeScenario(saver: BaseCheckpointSaver, prefix: string): Promise<Scenario> {
  const g = graphsOver(saver);
  const chat = newThread(`${prefix}-chat`);
  for (const turn of CHAT_TURNS) await g.chat.invoke({ messages: [turn] }, chat);

  const approval = newThread(`${prefix}-approval`);
  await g.approval.invoke({ request: "a refund" }, approval);

  const forked = newThread(`${prefix}-forked`);
  await g.forked.invoke({ seed: 5 }, forked);
  const past = (await history(g.forked, forked)).find((s) => s.next[0] === "two");
  if (!past) throw new Error("no checkpoint before two");
  const fork = await g.forked.updateState(past.config, { total: 1000, trail: ["fork"] });
  await g.forked.invoke(null, fork);

  const trip = newThread(`${prefix}-trip`);
  await g.trip.invoke({ destination: "Lisbon" }, trip);

  const nested = newThread(`${prefix}-nested`);
  await g.nested.invoke({ path: [] }, nested);

  const fanOut = newThread(`${prefix}-fanout`);
  const failing = buildFanOutGraph(saver, { worker: 0, failOn: 3 });
  await expect(failing.invoke({ items: [1, 2, 3, 4] }, fanOut)).rejects.toThrow("worker 3 failed");

  return { chat, approval, forked, trip, nested, fanOut };
}

/** Everything a snapshot says, with messages and errors as plain data (their classes are compared elsewhere). */
function plainSnapshot(snapshot: StateSnapshot): unknown {
  return {
    ...normalSnapshot(snapshot),
    rawValues: normalize(snapshot.values),
    config: snapshot.config,
    parentConfig: snapshot.parentConfig,
    metadata: normalize(snapshot.metadata),
    createdAt: snapshot.createdAt,
    taskIds: snapshot.tasks.map((task) => ({
      id: task.id,
      name: task.name,
      path: task.path,
      interrupts: normalize(task.interrupts),
    })),
  };
}

type Graphs = ReturnType<typeof graphsOver>;

/** getState (with subgraphs) and the whole getStateHistory of every thread, field by field. */
export async function expectSameStates(expected: Graphs, actual: Graphs, scenario: Scenario): Promise<void> {
  for (const name of THREADS) {
    const config = scenario[name];
    const graphOf = (graphs: Graphs) =>
      graphs[name] as unknown as {
        getState(config: RunnableConfig, options?: { subgraphs?: boolean }): Promise<StateSnapshot>;
        getStateHistory(config: RunnableConfig): AsyncIterableIterator<StateSnapshot>;
      };
    const want = await graphOf(expected).getState(config, { subgraphs: true });
    const got = await graphOf(actual).getState(config, { subgraphs: true });
    expect(plainSnapshot(got), `getState of ${name}`).toEqual(plainSnapshot(want));
    expect(got.values, `values of ${name}`).toEqual(want.values);
    const wantHistory = (await history(graphOf(expected), config)).map(plainSnapshot);
    const gotHistory = (await history(graphOf(actual), config)).map(plainSnapshot);
    expect(gotHistory.length, `history length of ${name}`).toBeGreaterThan(1);
    expect(gotHistory, `getStateHistory of ${name}`).toEqual(wantHistory);
  }
}

/** Finishes every unfinished thread (answers the interrupts, re-runs the failed worker). */
export async function resumeScenario(graphs: Graphs, scenario: Scenario): Promise<unknown[]> {
  return [
    normalize(await graphs.approval.invoke(new Command({ resume: { approved: true, note: "ok" } }), scenario.approval)),
    normalize(await graphs.trip.invoke(new Command({ resume: "12A" }), scenario.trip)),
    normalize(await graphs.nested.invoke(new Command({ resume: "deep" }), scenario.nested)),
    normalize(await graphs.fanOut.invoke(null, scenario.fanOut)),
    normalize(await graphs.chat.invoke({ messages: [CHAT_TURNS[0]] }, scenario.chat)),
    normalize(await graphs.forked.invoke({ seed: 1 }, scenario.forked)),
  ];
}
