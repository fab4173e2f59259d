import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DrizzleSaver } from "../../src/index.js";
import { emptyCheckpoint } from "../filters/reference.js";
import { DIALECTS, freshSaver } from "../helpers/databases.js";

/**
 * Concurrent puts to one thread (root and subgraph namespaces) each update its row in
 * their own atomic unit: none of their counts or newest ids is lost.
 */
const WRITERS = 6;
const PUTS = 8;

describe.each(DIALECTS)("concurrent puts keep the thread's row on %s", (dialect) => {
  let saver: DrizzleSaver;
  let url: string;
  beforeAll(async () => {
    ({ saver, url } = await freshSaver(dialect));
  });
  afterAll(async () => {
    await saver?.close();
  });

  it("counts every root checkpoint and ends on the greatest id", async () => {
    const ids: string[][] = Array.from({ length: WRITERS }, () => []);
    await Promise.all(
      ids.map(async (mine, writer) => {
        for (let i = 0; i < PUTS; i++) {
          const checkpoint = emptyCheckpoint();
          const ns = writer % 3 === 2 ? "child:1" : "";
          await saver.put(
            { configurable: { thread_id: "shared", checkpoint_ns: ns } },
            checkpoint,
            { source: "loop", step: i, parents: {}, writer } as CheckpointMetadata,
            {},
          );
          if (ns === "") mine.push(checkpoint.id);
        }
      }),
    );
    const root = ids.flat().sort();
    const [thread] = await saver.searchThreads({ filter: {} });
    expect(thread.threadId).toBe("shared");
    expect(thread.checkpoints).toBe(root.length);
    expect(thread.latestCheckpointId).toBe(root.at(-1));
    const newest = await saver.getTuple({ configurable: { thread_id: "shared", checkpoint_ns: "" } });
    expect(thread.metadata).toEqual(newest?.metadata);
    expect(await saver.countThreads()).toBe(1);
  });

  // A put retried while its first try still runs (here from savers of their own, as from
  // several processes): each finds the checkpoint new, and only one of them may count it.
  it("counts a checkpoint put by several savers at once once", async () => {
    const savers = await Promise.all(Array.from({ length: WRITERS }, () => DrizzleSaver.fromUrl(url)));
    const config = { configurable: { thread_id: "repeated", checkpoint_ns: "" } };
    const ids: string[] = [];
    for (let step = 0; step < 10; step++) {
      const checkpoint = emptyCheckpoint();
      ids.push(checkpoint.id);
      const metadata = { source: "loop", step, parents: {} } as CheckpointMetadata;
      await Promise.all(savers.map((each) => each.put(config, checkpoint, metadata, {})));
    }
    await Promise.all(savers.map((each) => each.close()));
    const thread = (await saver.searchThreads({ filter: {} })).find((t) => t.threadId === "repeated");
    expect(thread?.checkpoints).toBe(ids.length);
    expect(thread?.latestCheckpointId).toBe(ids.at(-1));
  });
});
