import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Annotation, type BaseCheckpointSaver, Command, END, interrupt, START, StateGraph } from "@langchain/langgraph";
import { afterAll, beforeAll } from "vitest";

const run = promisify(execFile);

/** The repository root: drizzle-kit runs there, as it would in an application's root. */
export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/**
 * A temporary folder removed after the test file, so no run leaves migrations behind.
 * `out` is its path relative to the repository root: drizzle-kit prefixes "./" to the
 * `out` of its config when it reads a journal back, so an absolute path breaks it.
 */
export function tempFolder(label: string): { readonly path: string; readonly out: string } {
  // Made in beforeAll, so a suite that is filtered out leaves nothing behind.
  let made: string | undefined;
  beforeAll(() => {
    made = mkdtempSync(join(tmpdir(), `lgcd-dropin-${label}-`));
  });
  afterAll(() => {
    if (made) rmSync(made, { recursive: true, force: true });
  });
  const path = () => {
    if (!made) throw new Error("the temporary folder exists from beforeAll on");
    return made;
  };
  return {
    get path() {
      return path();
    },
    get out() {
      return relative(ROOT, path());
    },
  };
}

/** drizzle-kit's CLI (its package "bin"), run with node directly: npx costs a second a call. */
const DRIZZLE_KIT = join(ROOT, "node_modules", "drizzle-kit", "bin.cjs");

/** Runs the drizzle-kit CLI with a fixture's config in `cwd` (the application's root); returns its output. */
export async function drizzleKit(args: string[], env: Record<string, string>, cwd = ROOT): Promise<string> {
  try {
    const { stdout, stderr } = await run(process.execPath, [DRIZZLE_KIT, ...args], {
      cwd,
      env: { ...process.env, ...env },
      timeout: 120_000,
    });
    return `${stdout}\n${stderr}`;
  } catch (error) {
    // drizzle-kit often fails with its reason on stdout only.
    const { stdout = "", stderr = "" } = error as { stdout?: string; stderr?: string };
    throw new Error(`drizzle-kit ${args.join(" ")} failed:\n${stdout}\n${stderr}`, { cause: error });
  }
}

/** The .sql files of a migrations folder, in journal order. */
export function migrationFiles(folder: string): string[] {
  return readdirSync(folder)
    .filter((name) => name.endsWith(".sql"))
    .sort()
    .map((name) => join(folder, name));
}

export interface Journal {
  entries: { idx: number; version: string; when: number; tag: string; breakpoints: boolean }[];
}

export function readJournal(folder: string): Journal {
  return JSON.parse(readFileSync(join(folder, "meta", "_journal.json"), "utf8")) as Journal;
}

// ---------------------------------------------------------------------------
// The application's graph: a draft, a review subgraph that asks a human with
// interrupt() (so some checkpoints have a non-empty namespace), then publishing.
// ---------------------------------------------------------------------------

const FlowState = Annotation.Root({
  request: Annotation<string>,
  decision: Annotation<string>,
  log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

const ReviewState = Annotation.Root({
  request: Annotation<string>,
  decision: Annotation<string>,
  notes: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

export interface Answer {
  approved: boolean;
  note: string;
}

function buildFlow(checkpointer: BaseCheckpointSaver) {
  const review = new StateGraph(ReviewState)
    .addNode("check", (state) => ({ notes: [`checked ${state.request}`] }))
    .addNode("approve", (state) => {
      const answer = interrupt<{ question: string; notes: string[] }, Answer>({
        question: `approve ${state.request}?`,
        notes: state.notes,
      });
      return { decision: answer.approved ? `approved: ${answer.note}` : "rejected", notes: ["answered"] };
    })
    .addEdge(START, "check")
    .addEdge("check", "approve")
    .addEdge("approve", END)
    .compile();
  return new StateGraph(FlowState)
    .addNode("draft", (state) => ({ log: [`drafted ${state.request}`] }))
    .addNode("review", review)
    .addNode("publish", (state) => ({ log: [`published (${state.decision})`] }))
    .addEdge(START, "draft")
    .addEdge("draft", "review")
    .addEdge("review", "publish")
    .addEdge("publish", END)
    .compile({ checkpointer });
}

const config = (threadId: string) => ({ configurable: { thread_id: threadId } });

/** Starts a request; the graph stops at the review's interrupt. */
export async function startFlow(checkpointer: BaseCheckpointSaver, threadId: string, request: string) {
  const graph = buildFlow(checkpointer);
  await graph.invoke({ request }, config(threadId));
  const state = await graph.getState(config(threadId));
  expect(state.next).toEqual(["review"]);
  expect(state.values).toEqual({ request, log: [`drafted ${request}`] });
  expect(state.tasks.map((task) => task.interrupts.map((i) => i.value))).toEqual([
    [{ question: `approve ${request}?`, notes: [`checked ${request}`] }],
  ]);
}

/** Answers the interrupt (possibly on another connection than the one that started) and finishes. */
export async function resumeFlow(checkpointer: BaseCheckpointSaver, threadId: string, request: string, answer: Answer) {
  const graph = buildFlow(checkpointer);
  const result = await graph.invoke(new Command({ resume: answer }), config(threadId));
  const decision = answer.approved ? `approved: ${answer.note}` : "rejected";
  expect(result).toEqual({ request, decision, log: [`drafted ${request}`, `published (${decision})`] });
  const state = await graph.getState(config(threadId));
  expect(state.next).toEqual([]);
  // input, draft, review, publish: the parent's history, newest first.
  const history = [];
  for await (const snapshot of graph.getStateHistory(config(threadId))) history.push(snapshot.metadata?.step);
  expect(history).toEqual([3, 2, 1, 0, -1]);
}

// ---------------------------------------------------------------------------
// Partitioning by hand: drizzle-kit cannot write PARTITION BY, so a drop-in user
// adds it to the migrations (the recipes in docs/already-on-drizzle.md).
// ---------------------------------------------------------------------------

export const PARTITIONS = 8;

/**
 * PostgreSQL: a table cannot become partitioned after it was created, so the user
 * edits the migration drizzle-kit generated before applying it: each CREATE TABLE of
 * the saver gets `PARTITION BY HASH ("thread_id")`, followed by its partitions.
 * `schema` is the Postgres schema given to checkpointTables, if any.
 */
export function partitionPostgresMigration(text: string, tables: string[], schema?: string): string {
  const q = (name: string) => (schema ? `"${schema}"."${name}"` : `"${name}"`);
  let edited = text;
  for (const table of tables) {
    const head = `CREATE TABLE ${q(table)} (`;
    const start = edited.indexOf(head);
    if (start < 0) throw new Error(`no CREATE TABLE for ${table} in the generated migration`);
    const end = edited.indexOf("\n);", start);
    const partitions = Array.from(
      { length: PARTITIONS },
      (_, i) =>
        `--> statement-breakpoint\nCREATE TABLE ${q(`${table}_p${i}`)} PARTITION OF ${q(table)} FOR VALUES WITH (MODULUS ${PARTITIONS}, REMAINDER ${i});\n`,
    ).join("");
    edited = `${edited.slice(0, end)}\n) PARTITION BY HASH ("thread_id");\n${partitions}${edited.slice(end + "\n);".length).replace(/^\n/, "")}`;
  }
  return edited;
}

/**
 * MySQL / MariaDB: a custom migration (`drizzle-kit generate --custom`) that
 * repartitions the tables drizzle-kit created.
 */
export function mysqlPartitionStatements(tables: string[]): string {
  return tables
    .map((table) => `ALTER TABLE \`${table}\` PARTITION BY KEY (\`thread_id\`) PARTITIONS ${PARTITIONS};`)
    .join("--> statement-breakpoint\n");
}
