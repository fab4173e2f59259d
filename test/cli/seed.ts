import { AIMessage, HumanMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { Annotation, Command, END, interrupt, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import type { ChannelVersions, CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { DrizzleSaver, type DrizzleSaverOptions } from "../../src/index.js";

/**
 * A small real LangGraph graph: `agent` answers and counts, `review` stops at an
 * interrupt until resumed, `finish` writes a note.
 */
const State = Annotation.Root({
  ...MessagesAnnotation.spec,
  count: Annotation<number>({ reducer: (a, b) => a + b, default: () => 0 }),
  note: Annotation<string>(),
  seen: Annotation<Date | undefined>(),
});

function buildGraph(saver: DrizzleSaver) {
  return new StateGraph(State)
    .addNode("agent", (state) => ({
      messages: [new AIMessage({ content: `answer ${state.count + 1}`, id: `ai-${state.count + 1}` })],
      count: 1,
    }))
    .addNode("review", () => {
      const verdict = interrupt({ question: "approve?" });
      return { note: `review: ${String(verdict)}` };
    })
    .addNode("finish", () => ({ seen: new Date("2025-01-02T03:04:05.000Z") }))
    .addEdge(START, "agent")
    .addEdge("agent", "review")
    .addEdge("review", "finish")
    .addEdge("finish", END)
    .compile({ checkpointer: saver });
}

export interface Seeded {
  /** Stopped at the interrupt of `review`: its newest checkpoint has a pending `__interrupt__` write. */
  interrupted: string;
  /** Run to the end (resumed once). */
  finished: string;
}

/** Runs the graph on a migrated database: one thread stopped at its interrupt, one finished. */
export async function seedGraphThreads(url: string): Promise<Seeded> {
  const saver = await DrizzleSaver.fromUrl(url);
  try {
    const graph = buildGraph(saver);
    const interrupted = "chat-interrupted";
    const finished = "chat-finished";
    await graph.invoke(
      { messages: [new HumanMessage({ content: "hello", id: "human-1" })] },
      { configurable: { thread_id: interrupted } },
    );
    await graph.invoke(
      { messages: [new HumanMessage({ content: "hi there", id: "human-2" })] },
      { configurable: { thread_id: finished } },
    );
    await graph.invoke(new Command({ resume: "yes" }), { configurable: { thread_id: finished } });
    return { interrupted, finished };
  } finally {
    await saver.close();
  }
}

/** Metadata of `seedMetadataThread`'s checkpoint number `step`. */
export function seededMetadata(step: number): Record<string, unknown> {
  const metadata: Record<string, unknown> = { source: step === 0 ? "input" : "loop", step, parents: {} };
  metadata.user = step === 5 ? "u7" : "u42";
  if (step === 2) metadata.attempt = 3; // the number 3
  if (step === 3) metadata.attempt = "3"; // the string "3"
  if (step === 4) metadata.tags = ["a", "b"];
  return metadata;
}

/**
 * Checkpoints "cp-0000" ... written with `put`, each a child of the one before, with
 * metadata chosen for the filter tests (see `seededMetadata`). Every checkpoint changes
 * `counter` and one of `even` / `odd`; `created` is a Date, to see it decoded.
 */
export async function seedMetadataThread(
  url: string,
  threadId: string,
  count: number,
  options: DrizzleSaverOptions = {},
): Promise<string[]> {
  const saver = await DrizzleSaver.fromUrl(url, options);
  const ids: string[] = [];
  try {
    let config: RunnableConfig = { configurable: { thread_id: threadId, checkpoint_ns: "" } };
    const versions: ChannelVersions = {};
    for (let step = 0; step < count; step++) {
      const id = `cp-${String(step).padStart(4, "0")}`;
      const version = `${String(step + 1).padStart(32, "0")}.${"0".repeat(16)}`;
      const parity = step % 2 === 0 ? "even" : "odd";
      const changed: ChannelVersions = { counter: version, [parity]: version };
      Object.assign(versions, changed);
      config = await saver.put(
        config,
        {
          v: 4,
          id,
          ts: new Date(Date.UTC(2025, 0, 1, 0, 0, step)).toISOString(),
          channel_values: { counter: step, [parity]: { step, created: new Date(Date.UTC(2025, 0, 1)) } },
          channel_versions: { ...versions },
          versions_seen: {},
        },
        seededMetadata(step) as CheckpointMetadata,
        changed,
      );
      ids.push(id);
    }
    return ids;
  } finally {
    await saver.close();
  }
}

/**
 * A thread with one checkpoint in the root namespace ("root-0") and two in the
 * subgraph namespace `ns` ("sub-0", then "sub-1" changing `inner`).
 */
export async function seedNamespaces(url: string, threadId: string, ns: string): Promise<void> {
  const saver = await DrizzleSaver.fromUrl(url);
  try {
    const version = (n: number) => `${String(n).padStart(32, "0")}.${"0".repeat(16)}`;
    const checkpoint = (id: string, values: Record<string, unknown>, versions: ChannelVersions) => ({
      v: 4,
      id,
      ts: "2025-02-01T00:00:00.000Z",
      channel_values: values,
      channel_versions: versions,
      versions_seen: {},
    });
    await saver.put(
      { configurable: { thread_id: threadId, checkpoint_ns: "" } },
      checkpoint("root-0", { outer: "o" }, { outer: version(1) }),
      { source: "input", step: -1, parents: {} },
      { outer: version(1) },
    );
    const first = await saver.put(
      { configurable: { thread_id: threadId, checkpoint_ns: ns } },
      checkpoint("sub-0", { inner: 1 }, { inner: version(1) }),
      { source: "input", step: -1, parents: { "": "root-0" } },
      { inner: version(1) },
    );
    await saver.put(
      first,
      checkpoint("sub-1", { inner: 2 }, { inner: version(2) }),
      { source: "loop", step: 0, parents: { "": "root-0" } },
      { inner: version(2) },
    );
  } finally {
    await saver.close();
  }
}
