// Fault worker: writes a chain of large checkpoints (and their writes) to one thread until it
// is killed, announcing every call before and after it (see ../chain.ts).
import { DrizzleSaver } from "../../../src/index.js";
import { type ChainSpec, ChainWriter } from "../chain.js";
import { argument, emit, run } from "./io.js";

export interface CrashWriterArgs extends ChainSpec {
  url: string;
  maxPuts: number;
}

const args = argument<CrashWriterArgs>();

await run(async () => {
  const saver = await DrizzleSaver.fromUrl(args.url);
  const writer = new ChainWriter(saver, args, emit);
  await writer.resume();
  emit({ kind: "ready" });
  for (let i = 0; i < args.maxPuts; i++) await writer.next();
  await saver.close();
  emit({ kind: "done" });
});
