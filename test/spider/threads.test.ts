import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { expect, it } from "vitest";
import { emptyCheckpoint } from "../filters/reference.js";
import { freshSpider } from "./support.js";

/**
 * checkpoint_threads through a Spider head: its rows live on the thread's shard, the
 * generated user column is computed there, and searches and counts merge the shards.
 */
it("keeps each thread's row on its shard and searches across them", async () => {
  const { saver } = await freshSpider();
  try {
    for (let i = 0; i < 8; i++) {
      for (let step = 0; step < 2; step++) {
        await saver.put(
          { configurable: { thread_id: `t${i}`, checkpoint_ns: "" } },
          emptyCheckpoint(),
          { source: "loop", step, parents: {}, user_id: `u${i % 2}` } as CheckpointMetadata,
          {},
        );
      }
    }
    await saver.prune(["t0"]);
    await saver.deleteThread("t1");
    const found = await saver.searchThreads({ filter: { user_id: "u0" }, limit: 10 });
    expect(found.map((t) => [t.threadId, t.checkpoints])).toEqual([
      ["t6", 2],
      ["t4", 2],
      ["t2", 2],
      ["t0", 1],
    ]);
    expect(await saver.countThreads({ filter: { user_id: "u1" } })).toBe(3);
    expect(await saver.countThreads()).toBe(7);
  } finally {
    await saver.close();
  }
});
