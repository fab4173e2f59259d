import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DrizzleSaver } from "../../src/index.js";
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
  beforeAll(async () => {
    ({ saver } = await freshSaver(dialect));
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
});
