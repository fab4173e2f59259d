// Concurrency worker: writes checkpoint chains and pending writes to several threads,
// some of them shared with other processes, and acknowledges every completed call.
import { uuid6 } from "@langchain/langgraph-checkpoint";
import { DrizzleSaver, type UrlDriver } from "../../../src/index.js";
import { channelValue, checkpointOf } from "../helpers.js";
import { argument, barrier, emit, run } from "./io.js";

export interface WriterArgs {
  url: string;
  /** The driver fromUrl opens the URL with (its default when absent). */
  driver?: UrlDriver;
  proc: number;
  steps: number;
  /** Characters of each channel value. */
  size: number;
  channels: number;
  /** Chains this process writes; a thread may also be written by other processes. */
  chains: { threadId: string; ns: string }[];
  /** A checkpoint every process writes the same task's writes to, racing. */
  sharedTask?: { threadId: string; ns: string; checkpointId: string };
  /** Wait for "go" on stdin before the first write. */
  barrier: boolean;
  /** Open the database (fromUrl + setup) only after the barrier: the fresh-file race. */
  openAfterBarrier: boolean;
}

interface Chain {
  threadId: string;
  ns: string;
  parentId: string | null;
  seeds: Record<string, string>;
  versions: Record<string, string>;
}

const args = argument<WriterArgs>();

await run(async () => {
  let saver: DrizzleSaver | undefined;
  const open = async () => {
    const opened = await DrizzleSaver.fromUrl(args.url, { driver: args.driver });
    await opened.setup();
    return opened;
  };
  if (!args.openAfterBarrier) saver = await open();
  emit({ kind: "ready" });
  if (args.barrier) await barrier();
  if (!saver) saver = await open();

  const chains: Chain[] = args.chains.map((chain) => ({ ...chain, parentId: null, seeds: {}, versions: {} }));
  let puts = 0;
  let writeCalls = 0;
  let reads = 0;
  for (let step = 0; step < args.steps; step++) {
    for (const [c, chain] of chains.entries()) {
      // Channel k changes every (k + 1) steps: later checkpoints share the blobs of unchanged channels.
      const newVersions: Record<string, string> = {};
      for (let k = 0; k < args.channels; k++) {
        const channel = `ch${k}`;
        if (step % (k + 1) !== 0 && chain.versions[channel] !== undefined) continue;
        chain.seeds[channel] = `p${args.proc}|c${c}|${channel}|s${step}`;
        chain.versions[channel] = String(saver.getNextVersion(chain.versions[channel] as unknown as number));
        newVersions[channel] = chain.versions[channel];
      }
      const values = Object.fromEntries(
        Object.entries(chain.seeds).map(([channel, seed]) => [channel, channelValue(seed, args.size)]),
      );
      const id = uuid6(step);
      const config = {
        configurable: {
          thread_id: chain.threadId,
          checkpoint_ns: chain.ns,
          ...(chain.parentId ? { checkpoint_id: chain.parentId } : {}),
        },
      };
      const metadata = { source: "loop" as const, step, parents: {}, writer: args.proc };
      const saved = await saver.put(config, checkpointOf(id, values, { ...chain.versions }), metadata, newVersions);
      puts += 1;
      emit({
        kind: "put",
        threadId: chain.threadId,
        ns: chain.ns,
        checkpointId: id,
        parentId: chain.parentId,
        step,
        seeds: { ...chain.seeds },
        versions: { ...chain.versions },
      });
      chain.parentId = id;

      // A task's writes, then the same task retried with other values: the first stay.
      const taskId = `task-p${args.proc}-s${step}`;
      const first = [0, 1, 2].map((idx) => `p${args.proc}|${taskId}|idx${idx}|first`);
      await saver.putWrites(
        saved,
        first.map((seed, idx) => [`ch${idx}`, seed]),
        taskId,
      );
      emit({ kind: "writes", threadId: chain.threadId, ns: chain.ns, checkpointId: id, taskId, seeds: first });
      const retry = first.map((seed) => seed.replace("first", "retry"));
      await saver.putWrites(
        saved,
        retry.map((seed, idx) => [`ch${idx}`, seed]),
        taskId,
      );
      emit({ kind: "retry", threadId: chain.threadId, ns: chain.ns, checkpointId: id, taskId, seeds: retry });
      // A special channel (an error) replaces what the task wrote before.
      for (const attempt of [1, 2]) {
        const seed = `p${args.proc}|${taskId}|error|${attempt}`;
        await saver.putWrites(saved, [["__error__", { message: seed }]], taskId);
        emit({ kind: "special", threadId: chain.threadId, ns: chain.ns, checkpointId: id, taskId, seed, attempt });
      }
      writeCalls += 4;

      // Readers run beside the writers (SQLite WAL: they never wait for a writer).
      await saver.getTuple({ configurable: { thread_id: chain.threadId, checkpoint_ns: chain.ns } });
      for await (const _ of saver.list({ configurable: { thread_id: chain.threadId } }, { limit: 3 })) reads += 1;
      reads += 1;
    }

    if (args.sharedTask) {
      // Every process writes the same task of the same checkpoint at about the same time.
      const taskId = `shared-s${step}`;
      const seeds = [0, 1, 2].map((idx) => `p${args.proc}|${taskId}|idx${idx}`);
      const { threadId, ns, checkpointId } = args.sharedTask;
      await saver.putWrites(
        { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpointId } },
        seeds.map((seed, idx) => [`ch${idx}`, seed]),
        taskId,
      );
      writeCalls += 1;
      emit({ kind: "shared", step, taskId, seeds });
    }
  }
  await saver.close();
  emit({ kind: "done", puts, writeCalls, reads });
});
