import { type BaseMessage, isAIMessage, isBaseMessage, isToolMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  Annotation,
  type BaseCheckpointSaver,
  END,
  interrupt,
  Send,
  START,
  StateGraph,
  type StateSnapshot,
} from "@langchain/langgraph";
import { afterAll, beforeAll } from "vitest";
import type { DrizzleSaver } from "../../src/index.js";
import { TEST_ENCRYPTION } from "../encryption/keys.js";
import { DIALECTS, type DialectName, freshSaver } from "../helpers/databases.js";
import { type ExtraDriver, freshDriverSaver, TARGETS } from "../helpers/drivers.js";
import { freshSpider } from "../spider/support.js";

/**
 * Graphs shared by the end-to-end tests. Every builder takes the checkpointer, so
 * the very same graph runs once on MemorySaver (the reference) and once on the
 * DrizzleSaver under test; builders with side-effect counters take their own
 * counter object so the two runs never share state.
 */

let threadCounter = 0;
/** A thread id no other test uses (tests of one dialect share a database). */
export function newThread(prefix: string): RunnableConfig & { configurable: { thread_id: string } } {
  threadCounter += 1;
  return { configurable: { thread_id: `${prefix}-${process.pid}-${threadCounter}-${Date.now()}` } };
}

// ---------------------------------------------------------------------------
// Normalisation: what must be equal between savers (no ids, no timestamps).
// ---------------------------------------------------------------------------

export interface NormalMessage {
  type: string;
  content: unknown;
  name?: string;
  toolCalls?: unknown;
  toolCallId?: string;
}

function normalMessage(message: BaseMessage): NormalMessage {
  const normal: NormalMessage = { type: message.getType(), content: message.content };
  if (message.name !== undefined) normal.name = message.name;
  if (isAIMessage(message))
    normal.toolCalls = (message.tool_calls ?? []).map(({ id, name, args }) => ({ id, name, args }));
  if (isToolMessage(message)) normal.toolCallId = message.tool_call_id;
  return normal;
}

/**
 * Plain data for comparison: messages become {type, content, ...} records,
 * interrupts keep only their value (their id hashes saver-specific task ids),
 * errors keep name and message.
 */
export function normalize(value: unknown): unknown {
  if (isBaseMessage(value)) return normalMessage(value);
  if (value instanceof Error) return { error: value.name, message: value.message };
  if (Array.isArray(value)) return value.map(normalize);
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) {
      out[key] = key === "__interrupt__" && Array.isArray(inner) ? inner.map(normalInterrupt) : normalize(inner);
    }
    return out;
  }
  return value;
}

function normalInterrupt(value: unknown): unknown {
  const record = value as { value?: unknown };
  return { value: normalize(record.value) };
}

export interface NormalTask {
  name: string;
  interrupts: unknown[];
  error?: unknown;
  result?: unknown;
  subgraph?: NormalSnapshot;
}

export interface NormalSnapshot {
  values: unknown;
  next: string[];
  source: unknown;
  step: unknown;
  namespaced: boolean;
  hasParent: boolean;
  tasks: NormalTask[];
}

function isSnapshot(value: unknown): value is StateSnapshot {
  return value !== null && typeof value === "object" && "values" in value && "next" in value && "tasks" in value;
}

/** A state snapshot without ids and timestamps. */
export function normalSnapshot(snapshot: StateSnapshot): NormalSnapshot {
  const ns = snapshot.config.configurable?.checkpoint_ns;
  return {
    values: normalize(snapshot.values),
    next: [...snapshot.next],
    source: snapshot.metadata?.source,
    step: snapshot.metadata?.step,
    namespaced: typeof ns === "string" && ns.length > 0,
    hasParent: snapshot.parentConfig !== undefined,
    tasks: snapshot.tasks.map((task) => {
      const normal: NormalTask = { name: task.name, interrupts: task.interrupts.map(normalInterrupt) };
      if (task.error !== undefined) normal.error = normalize(task.error);
      if (task.result !== undefined) normal.result = normalize(task.result);
      if (isSnapshot(task.state)) normal.subgraph = normalSnapshot(task.state);
      return normal;
    }),
  };
}

/** Anything with the read side of a compiled graph. */
export interface ReadableGraph {
  getState(config: RunnableConfig, options?: { subgraphs?: boolean }): Promise<StateSnapshot>;
  getStateHistory(config: RunnableConfig): AsyncIterableIterator<StateSnapshot>;
}

export async function history(graph: ReadableGraph, config: RunnableConfig): Promise<StateSnapshot[]> {
  const snapshots: StateSnapshot[] = [];
  for await (const snapshot of graph.getStateHistory(config)) snapshots.push(snapshot);
  return snapshots;
}

export async function normalHistory(graph: ReadableGraph, config: RunnableConfig): Promise<NormalSnapshot[]> {
  return (await history(graph, config)).map(normalSnapshot);
}

// ---------------------------------------------------------------------------
// 1. Chat: messages accumulate across turns; the bot may call a tool (chat-graph.ts,
//    shared with the real-graph benchmark).
// ---------------------------------------------------------------------------

export { buildChatGraph, CHAT_TURNS } from "./chat-graph.js";

// ---------------------------------------------------------------------------
// 2. Human in the loop: interrupt() inside a node, resumed with Command.
// ---------------------------------------------------------------------------

const ApprovalState = Annotation.Root({
  request: Annotation<string>,
  decision: Annotation<string>,
  log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

export function buildApprovalGraph(checkpointer: BaseCheckpointSaver, counter: { review: number }) {
  return new StateGraph(ApprovalState)
    .addNode("draft", (state) => ({ log: [`drafted ${state.request}`] }))
    .addNode("review", (state) => {
      counter.review += 1;
      const answer = interrupt<{ question: string; draft: string[] }, { approved: boolean; note: string }>({
        question: `approve ${state.request}?`,
        draft: state.log,
      });
      return { decision: answer.approved ? `approved: ${answer.note}` : "rejected", log: ["reviewed"] };
    })
    .addNode("publish", (state) => ({ log: [`published (${state.decision})`] }))
    .addEdge(START, "draft")
    .addEdge("draft", "review")
    .addEdge("review", "publish")
    .addEdge("publish", END)
    .compile({ checkpointer });
}

// ---------------------------------------------------------------------------
// 3. A subgraph node that interrupts (non-empty checkpoint namespace).
// ---------------------------------------------------------------------------

const TripState = Annotation.Root({
  destination: Annotation<string>,
  steps: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  // Overwritten with the subgraph's whole booking log when the subgraph returns.
  booking: Annotation<string[]>,
});

const BookingState = Annotation.Root({
  destination: Annotation<string>,
  booking: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

export function buildTripGraph(checkpointer: BaseCheckpointSaver, counter: { confirm: number }) {
  const booking = new StateGraph(BookingState)
    .addNode("quote", (state) => ({ booking: [`quote for ${state.destination}`] }))
    .addNode("confirm", (state) => {
      counter.confirm += 1;
      const seat = interrupt<{ destination: string; quotes: string[] }, string>({
        destination: state.destination,
        quotes: state.booking,
      });
      return { booking: [`seat ${seat} confirmed`] };
    })
    .addNode("ticket", (state) => ({ booking: [`ticket #${state.booking.length} issued`] }))
    .addEdge(START, "quote")
    .addEdge("quote", "confirm")
    .addEdge("confirm", "ticket")
    .addEdge("ticket", END)
    .compile();
  return new StateGraph(TripState)
    .addNode("plan", (state) => ({ steps: [`plan ${state.destination}`] }))
    .addNode("book", booking)
    .addNode("wrap_up", (state) => ({ steps: [`done: ${state.booking.join("; ")}`] }))
    .addEdge(START, "plan")
    .addEdge("plan", "book")
    .addEdge("book", "wrap_up")
    .addEdge("wrap_up", END)
    .compile({ checkpointer });
}

// ---------------------------------------------------------------------------
// 4. Send fan-out, reduced into a list.
// ---------------------------------------------------------------------------

const FanOutState = Annotation.Root({
  items: Annotation<number[]>,
  results: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  summary: Annotation<string>,
});

const WorkerInput = Annotation.Root({ item: Annotation<number>, label: Annotation<string> });

export function buildFanOutGraph(checkpointer: BaseCheckpointSaver, counter: { worker: number; failOn?: number }) {
  return new StateGraph(FanOutState)
    .addNode("split", (state) => ({ results: [`split ${state.items.length}`] }))
    .addNode(
      "worker",
      (input: typeof WorkerInput.State) => {
        counter.worker += 1;
        if (counter.failOn === input.item) {
          counter.failOn = undefined;
          throw new Error(`worker ${input.item} failed`);
        }
        return { results: [`${input.label}=${input.item * input.item}`] };
      },
      { input: WorkerInput },
    )
    .addNode("summarize", (state) => ({ summary: `${state.results.length} results` }))
    .addEdge(START, "split")
    .addConditionalEdges(
      "split",
      (state) => state.items.map((item) => new Send("worker", { item, label: `sq${item}` })),
      ["worker"],
    )
    .addEdge("worker", "summarize")
    .addEdge("summarize", END)
    .compile({ checkpointer });
}

// ---------------------------------------------------------------------------
// 5. Two parallel nodes, one fails the first time.
// ---------------------------------------------------------------------------

const ParallelState = Annotation.Root({
  input: Annotation<string>,
  outputs: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

export interface ParallelCounter {
  steady: number;
  flaky: number;
  joined: number;
  flakyFailures: number;
}

export function buildParallelGraph(checkpointer: BaseCheckpointSaver, counter: ParallelCounter) {
  return new StateGraph(ParallelState)
    .addNode("steady", (state) => {
      counter.steady += 1;
      return { outputs: [`steady saw ${state.input}`] };
    })
    .addNode("flaky", async (state) => {
      counter.flaky += 1;
      // Let the sibling finish first, so its writes are saved before the failure.
      await new Promise((resolve) => setTimeout(resolve, 20));
      if (counter.flakyFailures > 0) {
        counter.flakyFailures -= 1;
        throw new Error(`flaky failed on ${state.input}`);
      }
      return { outputs: [`flaky saw ${state.input}`] };
    })
    .addNode("join", (state) => {
      counter.joined += 1;
      return { outputs: [`joined ${[...state.outputs].sort().join(" + ")}`] };
    })
    .addEdge(START, "steady")
    .addEdge(START, "flaky")
    .addEdge(["steady", "flaky"], "join")
    .addEdge("join", END)
    .compile({ checkpointer });
}

// ---------------------------------------------------------------------------
// 6. A linear pipeline for time travel: every step's output depends on the state.
// ---------------------------------------------------------------------------

const PipelineState = Annotation.Root({
  seed: Annotation<number>,
  trail: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  total: Annotation<number>,
  // Written only by the first and last node, so its version lags behind the others.
  note: Annotation<string>,
});

export function buildPipelineGraph(checkpointer: BaseCheckpointSaver) {
  return new StateGraph(PipelineState)
    .addNode("one", (state) => ({
      trail: [`one:${state.seed}`],
      total: state.seed + 1,
      note: `started at ${state.seed}`,
    }))
    .addNode("two", (state) => ({ trail: [`two:${state.total}`], total: state.total * 2 }))
    .addNode("three", (state) => ({ trail: [`three:${state.total}`], total: state.total + 100 }))
    .addNode("four", (state) => ({
      trail: [`four:${state.total}`],
      total: state.total - 1,
      note: `${state.note}, ended at ${state.total - 1}`,
    }))
    .addEdge(START, "one")
    .addEdge("one", "two")
    .addEdge("two", "three")
    .addEdge("three", "four")
    .addEdge("four", END)
    .compile({ checkpointer });
}

// ---------------------------------------------------------------------------
// Per-dialect saver lifecycle.
// ---------------------------------------------------------------------------

export interface SaverHandle {
  readonly saver: DrizzleSaver;
  readonly url: string;
}

/** Each dialect through fromUrl's default driver with encryption at rest on (docs/encryption.md). */
const ENCRYPTED_TARGETS = ["sqlite encrypted", "postgres encrypted", "mysql encrypted"] as const;

/** Where the graph tests run: every driver, MariaDB sharded by Spider (test/spider/), each dialect encrypted. */
export const GRAPH_TARGETS = [...TARGETS, "spider", ...ENCRYPTED_TARGETS] as const;
export type GraphTarget = (typeof GRAPH_TARGETS)[number];
/** Each dialect through its default driver, plain and encrypted (the LangGraph feature tests, test/graphs/features-*). */
export const DIALECT_TARGETS = [...DIALECTS, ...ENCRYPTED_TARGETS] as const;
/** The targets a second process or saver can reach by URL (the other drivers are made from a drizzle database). */
export const URL_TARGETS = [...DIALECTS, "spider"] as const;

/** A DrizzleSaver over a fresh database for the enclosing describe block, closed after it. */
export function useFreshSaver(target: GraphTarget): SaverHandle {
  let current: { saver: DrizzleSaver; url: string; close(): Promise<void> } | undefined;
  beforeAll(async () => {
    if (target === "spider") {
      const fresh = await freshSpider();
      current = { ...fresh, close: () => fresh.saver.close() };
    } else if ((ENCRYPTED_TARGETS as readonly string[]).includes(target)) {
      const dialect = target.split(" ")[0] as DialectName;
      const fresh = await freshSaver(dialect, { encryption: TEST_ENCRYPTION });
      current = { ...fresh, close: () => fresh.saver.close() };
    } else if ((DIALECTS as readonly string[]).includes(target)) {
      const fresh = await freshSaver(target as DialectName);
      current = { ...fresh, close: () => fresh.saver.close() };
    } else {
      const { saver, database } = await freshDriverSaver(target as ExtraDriver);
      current = { saver, url: "", close: () => database.close() };
    }
  });
  afterAll(async () => {
    await current?.close();
  });
  return {
    get saver() {
      if (!current) throw new Error("saver not ready");
      return current.saver;
    },
    get url() {
      if (!current?.url) throw new Error("no URL: this saver was made from a drizzle database");
      return current.url;
    },
  };
}

// ---------------------------------------------------------------------------
// Extras: nested subgraphs, and a node that interrupts twice.
// ---------------------------------------------------------------------------

const NestedState = Annotation.Root({
  path: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

/** outer → middle (subgraph) → inner (subgraph of the subgraph), which interrupts. */
export function buildNestedGraph(checkpointer: BaseCheckpointSaver) {
  const inner = new StateGraph(NestedState)
    .addNode("ask", (state) => ({
      path: [`inner got ${interrupt<string, string>(`depth 2 after ${state.path.length}`)}`],
    }))
    .addEdge(START, "ask")
    .addEdge("ask", END)
    .compile();
  const middle = new StateGraph(NestedState)
    .addNode("enter", () => ({ path: ["middle in"] }))
    .addNode("inner", inner)
    .addNode("leave", (state) => ({ path: [`middle out at ${state.path.length}`] }))
    .addEdge(START, "enter")
    .addEdge("enter", "inner")
    .addEdge("inner", "leave")
    .addEdge("leave", END)
    .compile();
  return new StateGraph(Annotation.Root({ log: Annotation<string[]>, path: Annotation<string[]> }))
    .addNode("start", () => ({ path: ["outer"] }))
    .addNode("middle", middle)
    .addNode("finish", (state) => ({ log: [`finished with ${state.path.length} entries`] }))
    .addEdge(START, "start")
    .addEdge("start", "middle")
    .addEdge("middle", "finish")
    .addEdge("finish", END)
    .compile({ checkpointer });
}

const FormState = Annotation.Root({
  name: Annotation<string>,
  age: Annotation<number>,
  greeting: Annotation<string>,
});

/** One node asks two questions, so it is interrupted and resumed twice. */
export function buildFormGraph(checkpointer: BaseCheckpointSaver, counter: { ask: number }) {
  return new StateGraph(FormState)
    .addNode("ask", () => {
      counter.ask += 1;
      const name = interrupt<string, string>("name?");
      const age = interrupt<string, number>(`age of ${name}?`);
      return { name, age };
    })
    .addNode("greet", (state) => ({ greeting: `hello ${state.name}, ${state.age}` }))
    .addEdge(START, "ask")
    .addEdge("ask", "greet")
    .addEdge("greet", END)
    .compile({ checkpointer });
}
