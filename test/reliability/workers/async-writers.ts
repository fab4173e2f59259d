// Concurrency worker: many async writers on threads of its own (see async-writers.ts),
// started at the parent's "go", acknowledging every checkpoint once its writes landed.
import { DrizzleSaver } from "../../../src/index.js";
import { runWriters } from "../async-writers.js";
import { argument, barrier, emit, run } from "./io.js";

export interface AsyncWritersArgs {
  url: string;
  /** Thread ids are `${prefix}-0` and so on. */
  prefix: string;
  writers: number;
  steps: number;
}

const args = argument<AsyncWritersArgs>();

await run(async () => {
  const saver = await DrizzleSaver.fromUrl(args.url);
  try {
    await saver.setup();
    emit({ kind: "ready" });
    await barrier();
    const acknowledged = await runWriters(saver, args.prefix, args.writers, args.steps);
    for (const ack of acknowledged) emit({ kind: "ack", ...ack });
  } finally {
    await saver.close();
  }
});
