// Recovery worker: runs the steps graph on a thread, announcing each step as it starts.
// With hangAt, the step of that index never returns (the parent kills the process there).
import { DrizzleSaver } from "../../../src/index.js";
import { buildStepsGraph, graphConfig } from "../graph.js";
import { sleep } from "../helpers.js";
import { argument, emit, run } from "./io.js";

export interface GraphRunnerArgs {
  url: string;
  threadId: string;
  steps: number;
  hangAt?: number;
  durability?: "sync" | "async";
  /** Milliseconds each step takes at most (a random part of it). */
  stepMillis: number;
}

const args = argument<GraphRunnerArgs>();

await run(async () => {
  const saver = await DrizzleSaver.fromUrl(args.url);
  const graph = buildStepsGraph(saver, args.steps, async (index) => {
    emit({ kind: "step", index });
    // A timer keeps the process alive while the step hangs.
    if (index === args.hangAt) await new Promise<never>(() => setInterval(() => {}, 60_000));
    await sleep(Math.floor(Math.random() * args.stepMillis));
  });
  emit({ kind: "ready" });
  const result = await graph.invoke({ log: [] }, graphConfig(args.threadId, args.steps, args.durability));
  await saver.close();
  emit({ kind: "done", log: result.log });
});
