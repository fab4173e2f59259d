/**
 * Graph-shaped writers for the concurrency tests: each writer owns a thread and makes
 * the calls a graph step makes (a put with a growing message list, then its task's
 * pending writes), one step after another, many writers at once on one saver.
 * `verifyAcknowledged` then reads every acknowledged checkpoint back exactly.
 */
import type { PendingWrite } from "@langchain/langgraph-checkpoint";
import { uuid6 } from "@langchain/langgraph-checkpoint";
import type { DrizzleSaver } from "../../src/index.js";
import { checkpointOf } from "./helpers.js";

/** A checkpoint a writer's put acknowledged, with the step that wrote it. */
export interface Acknowledged {
  threadId: string;
  checkpointId: string;
  step: number;
}

/** The message list of a thread at `step`: one message added per step. */
const messagesAt = (threadId: string, step: number) =>
  Array.from({ length: step + 1 }, (_, k) => `${threadId}: message ${k} `.repeat(8));

/** The pending writes of a step's task. */
const writesAt = (threadId: string, step: number): PendingWrite[] => [
  ["answer", `${threadId}/${step}`],
  ["count", step],
];

/**
 * One writer: `steps` puts to `threadId`, each followed by its task's writes; after
 * the first step it waits for `afterFirstStep`.
 */
async function writeThread(
  saver: DrizzleSaver,
  threadId: string,
  steps: number,
  acknowledge: (ack: Acknowledged) => void,
  afterFirstStep: () => Promise<void> = async () => {},
): Promise<void> {
  let parentId: string | undefined;
  let messagesVersion: string | number | undefined;
  let stepVersion: string | number | undefined;
  for (let step = 0; step < steps; step++) {
    messagesVersion = saver.getNextVersion(messagesVersion as number);
    stepVersion = saver.getNextVersion(stepVersion as number);
    const versions = { messages: messagesVersion, step: stepVersion };
    const checkpoint = checkpointOf(uuid6(step), { messages: messagesAt(threadId, step), step }, versions);
    const config = await saver.put(
      { configurable: { thread_id: threadId, checkpoint_ns: "", ...(parentId ? { checkpoint_id: parentId } : {}) } },
      checkpoint,
      { source: "loop", step, parents: {} },
      versions,
    );
    await saver.putWrites(config, writesAt(threadId, step), `task-${step}`);
    parentId = checkpoint.id;
    acknowledge({ threadId, checkpointId: checkpoint.id, step });
    if (step === 0) await afterFirstStep();
  }
}

/**
 * `writers` writers at once, on threads `${prefix}-0` and so on; what they acknowledged.
 * Once every thread has its first checkpoint, `afterFirstSteps` runs (given the thread
 * ids) before any writer goes on.
 */
export async function runWriters(
  saver: DrizzleSaver,
  prefix: string,
  writers: number,
  steps: number,
  afterFirstSteps: (threadIds: string[]) => Promise<void> = async () => {},
): Promise<Acknowledged[]> {
  const acknowledged: Acknowledged[] = [];
  const threadIds = Array.from({ length: writers }, (_, w) => `${prefix}-${w}`);
  let waiting = writers;
  let allFirst: () => void = () => {};
  const firstStepsDone = new Promise<void>((resolve) => {
    allFirst = resolve;
  });
  const resume = firstStepsDone.then(() => afterFirstSteps(threadIds));
  const afterFirstStep = () => {
    waiting -= 1;
    if (waiting === 0) allFirst();
    return resume;
  };
  await Promise.all(
    threadIds.map((threadId) => writeThread(saver, threadId, steps, (ack) => acknowledged.push(ack), afterFirstStep)),
  );
  return acknowledged;
}

/** Problems found reading every acknowledged checkpoint back: values, writes, parent. */
export async function verifyAcknowledged(saver: DrizzleSaver, acknowledged: Acknowledged[]): Promise<string[]> {
  const problems: string[] = [];
  const byThread = new Map<string, Acknowledged[]>();
  for (const ack of acknowledged) byThread.set(ack.threadId, [...(byThread.get(ack.threadId) ?? []), ack]);
  for (const [threadId, acks] of byThread) {
    const sorted = acks.sort((x, y) => x.step - y.step);
    for (const [i, { checkpointId, step }] of sorted.entries()) {
      const tuple = await saver.getTuple({
        configurable: { thread_id: threadId, checkpoint_ns: "", checkpoint_id: checkpointId },
      });
      const where = `${threadId} step ${step}`;
      if (!tuple) {
        problems.push(`${where}: acknowledged checkpoint missing`);
        continue;
      }
      if (JSON.stringify(tuple.checkpoint.channel_values.messages) !== JSON.stringify(messagesAt(threadId, step)))
        problems.push(`${where}: messages differ`);
      if (tuple.checkpoint.channel_values.step !== step) problems.push(`${where}: step value differs`);
      const writes = (tuple.pendingWrites ?? []).map(([task, channel, value]) => [task, channel, value]);
      const expected = writesAt(threadId, step).map(([channel, value]) => [`task-${step}`, channel, value]);
      if (JSON.stringify(writes) !== JSON.stringify(expected)) problems.push(`${where}: pending writes differ`);
      const parent = tuple.parentConfig?.configurable?.checkpoint_id;
      if (parent !== (i === 0 ? undefined : sorted[i - 1].checkpointId)) problems.push(`${where}: wrong parent`);
    }
  }
  return problems;
}
