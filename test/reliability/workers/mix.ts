// Mixed-load worker: every kind of saver and store call, several in flight, on threads
// shared with the other processes, for a fixed time. Reports each call's count and every
// error a call returned (class, message, causes), then "done".
import { type CheckpointMetadata, uuid6 } from "@langchain/langgraph-checkpoint";
import { DrizzleSaver, DrizzleStore } from "../../../src/index.js";
import { describeError } from "../helpers.js";
import { argument, barrier, emit, run } from "./io.js";

export interface MixArgs {
  url: string;
  proc: number;
  ms: number;
  /** Calls in flight at once. */
  loops: number;
  /** Seal values (every process has both keys, the active one differs); process 0 also rekeys. */
  encrypted: boolean;
}

const args = argument<MixArgs>();
const KEYS = { k1: Buffer.alloc(32, 1), k2: Buffer.alloc(32, 2) };
const SHARED = Array.from({ length: 6 }, (_, i) => `shared-${i}`);
const rand = (n: number) => Math.floor(Math.random() * n);
const pick = <T>(items: T[]) => items[rand(items.length)];

await run(async () => {
  const encryption = args.encrypted ? { keys: KEYS, activeKeyId: args.proc % 2 === 0 ? "k1" : "k2" } : undefined;
  const saver = await DrizzleSaver.fromUrl(args.url, { encryption });
  const store = await DrizzleStore.fromUrl(args.url, { encryption });
  const counts: Record<string, number> = {};
  const errors: Record<string, number> = {};
  const call = async (name: string, work: () => Promise<unknown>) => {
    counts[name] = (counts[name] ?? 0) + 1;
    await work().catch((error: unknown) => {
      const key = `${name}: ${describeError(error).replace(/"[^"]*"/g, '"…"')}`;
      errors[key] = (errors[key] ?? 0) + 1;
    });
  };

  /** A graph step after the newest checkpoint: some channels kept (the put relies on its parent), then writes. */
  const step = async (threadId: string) => {
    const latest = await saver.getTuple({ configurable: { thread_id: threadId } });
    const versions = { ...(latest?.checkpoint.channel_versions ?? {}) } as Record<string, number>;
    const values = { ...(latest?.checkpoint.channel_values ?? {}) };
    const newVersions: Record<string, number> = {};
    for (const channel of ["a", "b", "c"]) {
      if (versions[channel] !== undefined && Math.random() < 0.6) continue;
      versions[channel] = saver.getNextVersion(versions[channel]);
      newVersions[channel] = versions[channel];
      values[channel] = `${args.proc}:${channel}:${Date.now()}`;
    }
    const config = { configurable: { thread_id: threadId, checkpoint_ns: "", checkpoint_id: latest?.checkpoint.id } };
    const metadata = { source: "loop", step: 0, parents: {}, run_id: `run-${rand(4)}` } as CheckpointMetadata;
    const checkpoint = { ...(latest?.checkpoint ?? { v: 4, versions_seen: {} }), id: uuid6(args.proc) };
    const saved = await saver.put(
      config,
      { ...checkpoint, ts: new Date().toISOString(), channel_values: values, channel_versions: versions },
      metadata,
      newVersions,
    );
    await Promise.all([
      call("putWrites", () => saver.putWrites(saved, [["a", 1]], `task-${rand(3)}`)),
      call("putWrites", () => saver.putWrites(saved, [["__error__", "x"]], `task-${rand(3)}`)),
    ]);
  };

  const calls: [string, number, () => Promise<unknown>][] = [
    ["step", 40, () => step(pick(SHARED))],
    ["step (own thread)", 10, () => step(`own-${args.proc}-${rand(5)}`)],
    ["deleteThread", 3, () => saver.deleteThread(pick(SHARED))],
    ["prune", 4, () => saver.prune([pick(SHARED)], { strategy: "keep_latest", keepLast: 2 })],
    ["deleteForRuns", 1, () => saver.deleteForRuns([`run-${rand(4)}`])],
    ["copyThread", 3, () => saver.copyThread(pick(SHARED), `copy-${rand(3)}`)],
    ["deleteThread (copy)", 2, () => saver.deleteThread(`copy-${rand(3)}`)],
    ["sweep", 1, () => saver.sweep({ idleFor: 2000, strategy: "keep_latest", keepLast: 1 })],
    ["expireThreads", 1, () => saver.expireThreads({ idleSince: new Date(Date.now() - 3000) })],
    ["pinThread", 2, () => saver.pinThread(pick(SHARED))],
    ["unpinThread", 2, () => saver.unpinThread(pick(SHARED))],
    [
      "list",
      5,
      async () => {
        for await (const _ of saver.list({}, { filter: { run_id: `run-${rand(4)}` }, limit: 10 }));
      },
    ],
    [
      "store.batch",
      15,
      () =>
        store.batch(
          Array.from({ length: 1 + rand(5) }, () => {
            const namespace = ["mix", `n${rand(3)}`];
            const key = `k${rand(8)}`;
            if (Math.random() < 0.25)
              return { namespacePrefix: ["mix"], filter: { v: { $gt: 5 } }, limit: 5, offset: 0 };
            return { namespace, key, value: Math.random() < 0.2 ? null : { v: rand(10) } };
          }),
        ),
    ],
  ];
  const total = calls.reduce((sum, [, weight]) => sum + weight, 0);
  const choose = () => {
    let r = Math.random() * total;
    for (const entry of calls) {
      r -= entry[1];
      if (r < 0) return entry;
    }
    return calls[0];
  };

  emit({ kind: "ready" });
  await barrier();
  const end = Date.now() + args.ms;
  const loops = Array.from({ length: args.loops }, async () => {
    while (Date.now() < end) {
      const [name, , work] = choose();
      await call(name, work);
    }
  });
  if (args.encrypted && args.proc === 0) {
    loops.push(
      (async () => {
        while (Date.now() < end) await call("rekey", () => saver.rekey({ batchSize: 25 }));
      })(),
    );
  }
  await Promise.all(loops);
  await store.close();
  await saver.close();
  emit({ kind: "done", counts, errors });
});
