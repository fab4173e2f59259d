/**
 * The write workload: threads that each run `steps` steps of a chat-like graph.
 * Every step is one op: a `put` of a checkpoint whose `messages` channel grew by one
 * ~300-byte message and whose `counter` went up (newVersions names only those two;
 * `context` is written at the first step only), then a `putWrites` of two writes for
 * the task that ran on that checkpoint.
 */
import { randomUUID } from "node:crypto";
import { AIMessage, type BaseMessage, HumanMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import {
  type BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointMetadata,
  uuid6,
} from "@langchain/langgraph-checkpoint";

/** Metadata of every benchmark checkpoint: LangGraph's fields plus the owning user. */
export type BenchMetadata = CheckpointMetadata<{ user: string }>;

/**
 * About 300 bytes of text, different for every thread and message: words of random
 * letters from a seeded generator, so the text compresses about as well as prose
 * (PostgreSQL compresses TOASTed values; repetitive text would flatter it).
 */
export function messageText(thread: number, index: number): string {
  const random = rng(thread * 100_003 + index);
  let text = `[t${thread} m${index}]`;
  while (text.length < 300) {
    const length = 2 + Math.floor(random() * 8);
    let word = "";
    for (let i = 0; i < length; i++) word += String.fromCharCode(97 + Math.floor(random() * 26));
    text += ` ${word}`;
  }
  return text.slice(0, 300);
}

export function message(thread: number, index: number): BaseMessage {
  const fields = { content: messageText(thread, index), id: `msg-${thread}-${index}` };
  return index % 2 === 0 ? new HumanMessage(fields) : new AIMessage(fields);
}

/** An unchanging channel (written once, at the first step): a short system prompt. */
const CONTEXT = `You are a support agent for an online shop. ${"Answer briefly, cite the policy, never invent order data. ".repeat(6)}`;

export const threadIdOf = (index: number): string => `t${String(index).padStart(6, "0")}`;
export const userIndexOf = (thread: number, threadsPerUser: number): number => Math.floor(thread / threadsPerUser);
export const userOf = (thread: number, threadsPerUser: number): string => `u${userIndexOf(thread, threadsPerUser)}`;

/** Writes one thread's whole run through `saver`; returns its checkpoint ids, oldest first. */
export async function writeThread(
  saver: BaseCheckpointSaver,
  thread: number,
  steps: number,
  threadsPerUser: number,
  onOp: () => void,
): Promise<string[]> {
  const ids: string[] = [];
  const user = userOf(thread, threadsPerUser);
  const messages: BaseMessage[] = [message(thread, 0)];
  const versions: ChannelVersions = {};
  let config: RunnableConfig = { configurable: { thread_id: threadIdOf(thread), checkpoint_ns: "" } };
  for (let step = 0; step < steps; step++) {
    const seen = { ...versions };
    const newVersions: ChannelVersions = {};
    const bump = (channel: string) => {
      // DrizzleSaver returns string versions typed as numbers; the official savers return integers.
      const next = saver.getNextVersion(versions[channel] as number | undefined);
      versions[channel] = next;
      newVersions[channel] = next;
    };
    if (step === 0) bump("context");
    bump("messages");
    bump("counter");
    const checkpoint: Checkpoint = {
      v: 4,
      id: uuid6(step),
      ts: new Date().toISOString(),
      channel_values: { messages: [...messages], counter: step, context: CONTEXT },
      channel_versions: { ...versions },
      versions_seen: { agent: seen },
    };
    const metadata: BenchMetadata = { source: step === 0 ? "input" : "loop", step: step - 1, parents: {}, user };
    config = await saver.put(config, checkpoint, metadata, newVersions);
    // The task that ran on this checkpoint: it answered with the next message.
    const reply = message(thread, step + 1);
    await saver.putWrites(
      config,
      [
        ["messages", [reply]],
        ["counter", step + 1],
      ],
      randomUUID(),
    );
    messages.push(reply);
    ids.push(checkpoint.id);
    onOp();
  }
  return ids;
}

/**
 * Runs the given threads with `writers` concurrent writers (each takes the next
 * thread when it finishes one). Records each thread's checkpoint ids in `ids`.
 */
export async function writeThreads(
  saver: BaseCheckpointSaver,
  threads: number[],
  options: { steps: number; writers: number; threadsPerUser: number; ids: Map<number, string[]>; onOp: () => void },
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < threads.length) {
      const thread = threads[next++];
      options.ids.set(thread, await writeThread(saver, thread, options.steps, options.threadsPerUser, options.onOp));
    }
  };
  await Promise.all(Array.from({ length: options.writers }, worker));
}

/** A small deterministic PRNG, so every saver is read at the same threads in the same order. */
export function rng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The savers in a new random order for every round or sample (seeded: runs repeat). In a
 * fixed cyclic order each saver ran right after the same one every time, and which one
 * came before moved a saver's read medians by up to 45% (BENCHMARKS.md, Method).
 */
export function shuffledOrders<T>(items: readonly T[], seed: number): () => T[] {
  const random = rng(seed);
  return () => {
    const order = [...items];
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [order[i], order[j]] = [order[j] as T, order[i] as T];
    }
    return order;
  };
}
