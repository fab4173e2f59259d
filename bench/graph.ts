/**
 * Real graphs on each saver: the chat graph of the end-to-end tests (test/graphs/chat-graph.ts:
 * a bot node, a tool node, MessagesAnnotation) run turn after turn, where bench/run.ts drives
 * the saver's calls itself. With `durability: "sync"` each step's checkpoint is stored before
 * the next step runs, so the saver's latency is on the graph's path; with LangGraph's default
 * ("async") the writes overlap the next step.
 *
 *   npm run bench:graph    # BENCH_ROUNDS (default 8) rounds of BENCH_THREADS (default 8) threads per case
 *
 * Savers: ours (plain and encrypted) and the official on SQLite and PostgreSQL, MemorySaver, and
 * ours on MariaDB (no official saver there). Prints, per saver, the time per thread (medians of interleaved rounds,
 * a new seeded random order each round) for 5 and 20 turns, and the median latency of each call the
 * graph made in the 5-turn sync runs. Every other turn asks for a tool call, so a turn is two
 * or four steps.
 */
import { type BaseMessage, HumanMessage } from "@langchain/core/messages";
import { buildChatGraph } from "../test/graphs/chat-graph.js";
import { formatMs, median, progress, progressDone } from "./stats.js";
import { SUBJECTS, type Subject, type SubjectName, Workspace } from "./subjects.js";
import { shuffledOrders } from "./workload.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
const THREADS = Number(process.env.BENCH_THREADS ?? 8);

interface Case {
  name: string;
  turns: number;
  durability: "sync" | "async";
  /** Whether the calls' latencies are recorded in this case. */
  calls: boolean;
}

const CASES: Case[] = [
  { name: "5 turns, sync", turns: 5, durability: "sync", calls: true },
  { name: "20 turns, sync", turns: 20, durability: "sync", calls: false },
  { name: "5 turns, async", turns: 5, durability: "async", calls: false },
];
const CALLS = ["getTuple", "put", "putWrites"] as const;

const turnText = (turn: number) => (turn % 2 === 1 ? `lookup item ${turn}` : `message ${turn}`);

/** A saver under test, with the latencies of its calls while `recording`. */
class Measured {
  recording = false;
  readonly calls = new Map<string, number[]>(CALLS.map((call) => [call, []]));
  readonly perThread = new Map<string, number[]>(CASES.map((c) => [c.name, []]));
  readonly graph: ReturnType<typeof buildChatGraph>;

  constructor(readonly subject: Subject) {
    // The graph calls the saver through these wrappers (own properties over the methods).
    const methods = subject.saver as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    for (const call of CALLS) {
      const original = methods[call].bind(subject.saver);
      methods[call] = async (...args: unknown[]) => {
        const start = performance.now();
        try {
          return await original(...args);
        } finally {
          if (this.recording) this.calls.get(call)?.push(performance.now() - start);
        }
      };
    }
    this.graph = buildChatGraph(subject.saver);
  }
}

let threadCounter = 0;

/** One thread of `turns` turns through the graph; its config, to read it back. */
async function runThread(measured: Measured, threadId: string, turns: number, durability: Case["durability"]) {
  const config = { configurable: { thread_id: threadId }, durability };
  for (let turn = 0; turn < turns; turn++) {
    await measured.graph.invoke({ messages: [new HumanMessage(turnText(turn))] }, config);
  }
  return config;
}

/** THREADS new threads of `c.turns` turns each on one saver; the time per thread in ms. */
async function runCase(measured: Measured, c: Case, record: boolean): Promise<number> {
  measured.recording = record && c.calls;
  const start = performance.now();
  for (let t = 0; t < THREADS; t++) await runThread(measured, `graph-${threadCounter++}`, c.turns, c.durability);
  measured.recording = false;
  return (performance.now() - start) / THREADS;
}

/** The messages of a thread after the 5 turns of a check, as text: what each saver must give back alike. */
async function checkedThread(measured: Measured): Promise<string> {
  const config = await runThread(measured, `check-${measured.subject.name}`, 5, "sync");
  const { values } = await measured.graph.getState(config);
  const messages = values.messages as BaseMessage[];
  return JSON.stringify(messages.map((message) => [message.getType(), message.content]));
}

/** Every saver gives back the thread MemorySaver gives back (a saver that loses data cannot look fast). */
async function check(savers: Measured[]): Promise<void> {
  const reference = savers.find((measured) => measured.subject.name === "memory");
  if (!reference) throw new Error("bench:graph: MemorySaver is the reference and must run");
  const expected = await checkedThread(reference);
  for (const measured of savers) {
    if (measured === reference) continue;
    const actual = await checkedThread(measured);
    if (actual !== expected) {
      throw new Error(`bench:graph: ${measured.subject.name} gave back ${actual}, MemorySaver ${expected}`);
    }
  }
}

/** A check and one warm-up round, then ROUNDS rounds of every case on every saver, each in a new random order. */
async function measure(savers: Measured[]): Promise<void> {
  await check(savers);
  for (const measured of savers) for (const c of CASES) await runCase(measured, c, false);
  const order = shuffledOrders(savers, 4);
  for (let round = 0; round < ROUNDS; round++) {
    progress(`[graph] round ${round + 1} of ${ROUNDS}`);
    for (const c of CASES) {
      for (const measured of order()) measured.perThread.get(c.name)?.push(await runCase(measured, c, true));
    }
  }
  progressDone(`[graph] ${ROUNDS} rounds of ${THREADS} threads per case and saver`);
}

const cell = (values: number[] | undefined) => formatMs(median(values ?? []));

function table(savers: Measured[], pairs: [string, string][]): string {
  const header = ["saver", ...CASES.map((c) => `${c.name} (per thread)`), ...CALLS.map((call) => `${call} (sync)`)];
  const lines = [`| ${header.join(" | ")} |`, `| --- |${" ---: |".repeat(header.length - 1)}`];
  for (const measured of savers) {
    const row = [
      measured.subject.label,
      ...CASES.map((c) => cell(measured.perThread.get(c.name))),
      ...CALLS.map((call) => cell(measured.calls.get(call))),
    ];
    lines.push(`| ${row.join(" | ")} |`);
  }
  const byName = new Map(savers.map((measured) => [measured.subject.name, measured]));
  for (const [ours, official] of pairs) {
    const a = byName.get(ours);
    const b = byName.get(official);
    if (!a || !b) continue;
    const ratio = (x: number[] | undefined, y: number[] | undefined) =>
      `${(median(x ?? []) / median(y ?? [])).toFixed(2)}x`;
    const row = [
      `${ours} / ${official}`,
      ...CASES.map((c) => ratio(a.perThread.get(c.name), b.perThread.get(c.name))),
      ...CALLS.map((call) => ratio(a.calls.get(call), b.calls.get(call))),
    ];
    lines.push(`| ${row.join(" | ")} |`);
  }
  return lines.join("\n");
}

const workspace = new Workspace({ pgUrl: process.env.PG_URL, mysqlUrl: process.env.MYSQL_URL });
const opened: Subject[] = [];
try {
  const names: SubjectName[] = ["ours-sqlite", "ours-sqlite-enc", "official-sqlite", "memory"];
  if (process.env.PG_URL) names.push("ours-pg", "ours-pg-enc", "official-pg");
  // MariaDB has no official saver: its row is absolute.
  if (process.env.MYSQL_URL) names.push("ours-mysql");
  for (const name of names) opened.push(await SUBJECTS[name](workspace));
  const savers = opened.map((subject) => new Measured(subject));
  await measure(savers);
  console.log(
    table(savers, [
      ["ours-sqlite", "official-sqlite"],
      ["ours-pg", "official-pg"],
      ["ours-sqlite-enc", "ours-sqlite"],
      ["ours-pg-enc", "ours-pg"],
    ]),
  );
  console.log(
    `\nTimes per thread and call latencies are medians; ratios below 1 mean the first saver takes less time. Node ${process.version}.`,
  );
} finally {
  for (const subject of opened) await subject.close();
  await workspace.drop();
}
