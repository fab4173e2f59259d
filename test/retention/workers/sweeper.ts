// A sweeper process: sweeps the database again and again until its time is up,
// reporting every thread it handled.
import { DrizzleSaver } from "../../../src/index.js";
import { argument, barrier, emit, run } from "../../reliability/workers/io.js";

export interface SweeperArgs {
  url: string;
  idleForMs: number;
  durationMs: number;
  label: string;
  /** "delete" by default. */
  strategy?: "delete" | "keep_latest";
  keepLast?: number;
  /** "sweep" (default), or expireThreads with idleSince = now - idleForMs, which reports counts only. */
  mode?: "sweep" | "expire";
}

const args = argument<SweeperArgs>();

run(async () => {
  const retention =
    args.strategy === "keep_latest"
      ? { idleFor: args.idleForMs, strategy: "keep_latest" as const, keepLast: args.keepLast }
      : { idleFor: args.idleForMs, strategy: "delete" as const };
  const saver = await DrizzleSaver.fromUrl(args.url, { retention });
  try {
    emit({ kind: "ready" });
    await barrier();
    const end = Date.now() + args.durationMs;
    let passes = 0;
    while (Date.now() < end && args.mode === "expire") {
      const threads = await saver.expireThreads({ idleSince: new Date(Date.now() - args.idleForMs), batchSize: 5 });
      emit({ kind: "expired", threads });
      passes++;
    }
    while (Date.now() < end && args.mode !== "expire") {
      await saver.sweep({
        batchSize: 5,
        onThread: (threadId, outcome) => emit({ kind: "thread", threadId, outcome, sweeper: args.label }),
      });
      passes++;
    }
    emit({ kind: "done", passes });
  } finally {
    await saver.close();
  }
});
