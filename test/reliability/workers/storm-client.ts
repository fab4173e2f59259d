// Recovery worker: keeps using one saver while the parent drops its connections again and
// again, until the parent writes "stop"; then, once the storm is over, the same saver must work.
// An unhandled rejection or an uncaught error in a driver ends this process (Node's default), as
// it would end an application.
import { createInterface } from "node:readline";
import { uuid6 } from "@langchain/langgraph-checkpoint";
import { DrizzleSaver } from "../../../src/index.js";
import { checkpointOf, sleep, within } from "../helpers.js";
import { argument, emit, run } from "./io.js";

export interface StormClientArgs {
  url: string;
}

const args = argument<StormClientArgs>();

await run(async () => {
  const saver = await DrizzleSaver.fromUrl(args.url);
  let stop = false;
  createInterface({ input: process.stdin }).on("line", (line) => {
    if (line.trim() === "stop") stop = true;
  });
  const put = (step: number) => {
    const version = String(saver.getNextVersion(step));
    return saver.put(
      { configurable: { thread_id: "storm", checkpoint_ns: "" } },
      checkpointOf(uuid6(step), { value: `step ${step}` }, { value: version }),
      { source: "loop", step, parents: {} },
      { value: version },
    );
  };
  await put(0);
  emit({ kind: "ready" });
  let ok = 0;
  let failed = 0;
  const kinds = new Set<string>();
  for (let i = 1; !stop; i++) {
    try {
      if (i % 2 === 0) await put(i);
      else await saver.getTuple({ configurable: { thread_id: "storm" } });
      ok += 1;
    } catch (error) {
      failed += 1;
      kinds.add(error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : "?");
    }
    await sleep(1);
  }
  // The storm is over: the same saver must work again at once (its pool reconnects).
  await sleep(300);
  const saved = await put(1_000_000);
  const back = await saver.getTuple(saved);
  if (back?.checkpoint.channel_values.value !== "step 1000000") {
    throw new Error(
      `the checkpoint just saved does not read back: got ${back ? JSON.stringify({ id: back.checkpoint.id, values: back.checkpoint.channel_values }) : "nothing"} for ${saved.configurable?.checkpoint_id}`,
    );
  }
  // Closing must not hang because connections were dropped earlier.
  await within(saver.close(), 30_000, "saver.close() after dropped connections");
  emit({ kind: "done", ok, failed, errorKinds: [...kinds].map((k) => k.slice(0, 100)) });
});
