import { type CheckpointTuple, uuid6 } from "@langchain/langgraph-checkpoint";
import { DrizzleSaver } from "../../src/index.js";
import { type ChannelValue, channelValue, checkpointOf, type Message, payload } from "./helpers.js";

/**
 * Writes a chain of checkpoints to one thread, announcing each call before it is
 * made ("intent") and after it returned ("put", "writes"), so that a verifier knows
 * which calls were acknowledged and which were cut off by a fault. Channel k changes
 * every k + 1 steps, so later checkpoints share the blobs of unchanged channels.
 */
export interface ChainSpec {
  threadId: string;
  ns: string;
  channels: number;
  /** Characters of each channel value. */
  size: number;
  /** Makes this writer's seeds unique. */
  label: string;
}

export class ChainWriter {
  private parentId: string | null = null;
  private versions: Record<string, string> = {};
  private seeds: Record<string, string> = {};
  private step = 0;

  constructor(
    private readonly saver: DrizzleSaver,
    private readonly spec: ChainSpec,
    private readonly onEvent: (message: Message) => void,
  ) {}

  /** Continues from the newest checkpoint in the database, as a restarted worker would. */
  async resume(): Promise<void> {
    const { threadId, ns } = this.spec;
    const latest = await this.saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: ns } });
    this.parentId = latest?.checkpoint.id ?? null;
    this.versions = { ...((latest?.checkpoint.channel_versions ?? {}) as Record<string, string>) };
    this.seeds = Object.fromEntries(
      Object.entries(latest?.checkpoint.channel_values ?? {}).map(([channel, value]) => [
        channel,
        (value as ChannelValue).seed,
      ]),
    );
  }

  /** One put and one putWrites; throws what the saver threw. */
  async next(): Promise<void> {
    const { threadId, ns, channels, size, label } = this.spec;
    const i = this.step++;
    const newVersions: Record<string, string> = {};
    for (let k = 0; k < channels; k++) {
      const channel = `ch${k}`;
      if (i % (k + 1) !== 0 && this.versions[channel] !== undefined) continue;
      this.seeds[channel] = `${label}|${channel}|${i}`;
      this.versions[channel] = String(this.saver.getNextVersion(this.versions[channel] as unknown as number));
      newVersions[channel] = this.versions[channel];
    }
    const id = uuid6(i);
    const values = Object.fromEntries(
      Object.entries(this.seeds).map(([channel, seed]) => [channel, channelValue(seed, size)]),
    );
    const config = {
      configurable: {
        thread_id: threadId,
        checkpoint_ns: ns,
        ...(this.parentId ? { checkpoint_id: this.parentId } : {}),
      },
    };
    this.onEvent({
      kind: "intent",
      checkpointId: id,
      parentId: this.parentId,
      seeds: { ...this.seeds },
      versions: { ...this.versions },
    });
    const saved = await this.saver.put(
      config,
      checkpointOf(id, values, { ...this.versions }),
      { source: "loop", step: i, parents: {} },
      newVersions,
    );
    this.onEvent({ kind: "put", checkpointId: id });
    this.parentId = id;
    const taskId = `task-${label}-${i}`;
    const writes = [0, 1, 2].map((idx) => `${taskId}|${idx}`);
    this.onEvent({ kind: "writes-intent", checkpointId: id, taskId, seeds: writes });
    await this.saver.putWrites(
      saved,
      writes.map((seed, idx) => [`ch${idx}`, writeValue(seed, size)]),
      taskId,
    );
    this.onEvent({ kind: "writes", checkpointId: id, taskId });
  }
}

/** The value of a pending write: a quarter of a channel value. */
export const writeValue = (seed: string, size: number) => payload(seed, Math.floor(size / 4));

export interface ChainCheck {
  problems: string[];
  /** Puts that returned. */
  acknowledged: number;
  /** Puts that were started and never returned (cut by the fault). */
  cut: number;
  /** Cut puts that nevertheless landed, complete (the fault came after the commit). */
  cutButLanded: number;
  /** putWrites calls started and never returned. */
  cutWrites: number;
  checkpointsInThread: number;
}

/**
 * Every acknowledged put and putWrites is readable exactly; a cut one is either
 * absent or complete (all its channel values, all its writes); the thread holds
 * nothing else, and every parent is present.
 */
export async function checkChain(saver: DrizzleSaver, spec: ChainSpec, events: Message[]): Promise<ChainCheck> {
  const problems: string[] = [];
  const acked = new Set(events.filter((m) => m.kind === "put").map((m) => m.checkpointId as string));
  const writesAcked = new Set(events.filter((m) => m.kind === "writes").map((m) => m.taskId as string));
  const intents = events.filter((m) => m.kind === "intent");
  const tuples = new Map<string, CheckpointTuple>();
  for await (const tuple of saver.list({ configurable: { thread_id: spec.threadId, checkpoint_ns: spec.ns } })) {
    tuples.set(tuple.checkpoint.id, tuple);
  }
  let cutButLanded = 0;
  for (const intent of intents) {
    const id = intent.checkpointId as string;
    const tuple = tuples.get(id);
    if (!tuple) {
      if (acked.has(id)) problems.push(`acknowledged checkpoint ${id} is missing`);
      continue;
    }
    if (!acked.has(id)) cutButLanded += 1;
    const values = Object.fromEntries(
      Object.entries(intent.seeds as Record<string, string>).map(([channel, seed]) => [
        channel,
        channelValue(seed, spec.size),
      ]),
    );
    if (JSON.stringify(tuple.checkpoint.channel_values) !== JSON.stringify(values)) {
      problems.push(
        `checkpoint ${id} (${acked.has(id) ? "acknowledged" : "cut"}) is incomplete: has channels ${Object.keys(tuple.checkpoint.channel_values)} of ${Object.keys(values)}`,
      );
    }
    if (JSON.stringify(tuple.checkpoint.channel_versions) !== JSON.stringify(intent.versions)) {
      problems.push(`checkpoint ${id}: channel versions differ`);
    }
    if ((tuple.parentConfig?.configurable?.checkpoint_id ?? null) !== intent.parentId) {
      problems.push(`checkpoint ${id}: wrong parent`);
    }
  }
  for (const intent of events.filter((m) => m.kind === "writes-intent")) {
    const tuple = tuples.get(intent.checkpointId as string);
    const expected = (intent.seeds as string[]).map((seed, idx) => [
      intent.taskId,
      `ch${idx}`,
      writeValue(seed, spec.size),
    ]);
    const stored = (tuple?.pendingWrites ?? []).filter(([task]) => task === intent.taskId);
    const complete = JSON.stringify(stored) === JSON.stringify(expected);
    if (writesAcked.has(intent.taskId as string) ? !complete : stored.length > 0 && !complete) {
      problems.push(`writes of ${intent.taskId}: stored ${stored.length} of ${expected.length}`);
    }
  }
  const known = new Set(intents.map((m) => m.checkpointId as string));
  for (const [id, tuple] of tuples) {
    if (!known.has(id)) problems.push(`unknown checkpoint ${id} in the thread`);
    const parent = tuple.parentConfig?.configurable?.checkpoint_id as string | undefined;
    if (parent !== undefined && !tuples.has(parent)) problems.push(`checkpoint ${id}: parent ${parent} is missing`);
  }
  return {
    problems,
    acknowledged: acked.size,
    cut: intents.filter((m) => !acked.has(m.checkpointId as string)).length,
    cutButLanded,
    cutWrites: events.filter((m) => m.kind === "writes-intent" && !writesAcked.has(m.taskId as string)).length,
    checkpointsInThread: tuples.size,
  };
}

/** {@link checkChain} for every writer's chain, read by a fresh saver on `url`: the problems and the summed figures. */
export async function checkChains(
  url: string,
  specs: ChainSpec[],
  events: Message[][],
): Promise<{
  problems: string[];
  figures: { acknowledged: number; cut: number; cutButLanded: number; cutWrites: number };
}> {
  const problems: string[] = [];
  const figures = { acknowledged: 0, cut: 0, cutButLanded: 0, cutWrites: 0 };
  const verifier = await DrizzleSaver.fromUrl(url);
  try {
    for (const [w, spec] of specs.entries()) {
      const check = await checkChain(verifier, spec, events[w]);
      problems.push(...check.problems);
      figures.acknowledged += check.acknowledged;
      figures.cut += check.cut;
      figures.cutButLanded += check.cutButLanded;
      figures.cutWrites += check.cutWrites;
    }
  } finally {
    await verifier.close();
  }
  return { problems, figures };
}
