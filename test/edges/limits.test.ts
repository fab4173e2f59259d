import type { PendingWrite } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { DIALECTS } from "../helpers/databases.js";
import { newThreadId, rowCounts, threadConfig, useFreshSaver } from "../lifecycle/support.js";
import { loopMetadata } from "./support.js";

/**
 * Multi-row statements stay under every driver's parameter limit (SQLite 32766,
 * PostgreSQL 65535): large fan-outs and wide checkpoints are split into several
 * statements of one atomic unit.
 */

const uuid = (n: number) => `1f0b0000-0000-6000-8000-${String(n).padStart(12, "0")}`;

describe.each(DIALECTS)("statement parameter limits on %s", (dialect) => {
  const db = useFreshSaver(dialect);

  it.each([4_000, 8_000])("stores %i pending writes of one task (a large Send fan-out)", async (count) => {
    const threadId = newThreadId(`writes-${count}`);
    const config = await db.saver.put(
      threadConfig(threadId),
      { v: 4, id: uuid(1), ts: "", channel_values: {}, channel_versions: {}, versions_seen: {} },
      loopMetadata(0),
      {},
    );
    const writes: PendingWrite[] = Array.from({ length: count }, (_, i) => ["__pregel_tasks", { item: i }]);
    writes.push(["__interrupt__", "stop"]);
    await db.saver.putWrites(config, writes, "fan-out-task");
    const tuple = await db.saver.getTuple(config);
    expect(tuple?.pendingWrites).toHaveLength(count + 1);
    expect(tuple?.pendingWrites?.[0]).toEqual(["fan-out-task", "__interrupt__", "stop"]);
    expect(tuple?.pendingWrites?.[count]).toEqual(["fan-out-task", "__pregel_tasks", { item: count - 1 }]);
  });

  it("stores a checkpoint with 8,000 new channel values", async () => {
    const threadId = newThreadId("wide-put");
    const values = Object.fromEntries(Array.from({ length: 8_000 }, (_, i) => [`c${i}`, i]));
    const versions = Object.fromEntries(Object.keys(values).map((channel) => [channel, "1"]));
    const config = await db.saver.put(
      threadConfig(threadId),
      { v: 4, id: uuid(1), ts: "", channel_values: values, channel_versions: versions, versions_seen: {} },
      loopMetadata(0),
      versions,
    );
    expect((await rowCounts(db.raw, threadId)).checkpoint_blobs).toBe(8_000);
    expect((await db.saver.getTuple(config))?.checkpoint.channel_values).toEqual(values);
  });

  it("lists a page of 100 checkpoints with 170 channels each", async () => {
    const threadId = newThreadId("wide-list");
    let config = threadConfig(threadId);
    for (let step = 0; step < 100; step++) {
      // Every channel changes at every step: 17,000 distinct blobs on the page.
      const values = Object.fromEntries(Array.from({ length: 170 }, (_, i) => [`c${i}`, step * 1000 + i]));
      const versions = Object.fromEntries(Object.keys(values).map((channel) => [channel, `${step + 1}`]));
      config = await db.saver.put(
        config,
        { v: 4, id: uuid(step + 1), ts: "", channel_values: values, channel_versions: versions, versions_seen: {} },
        loopMetadata(step),
        versions,
      );
    }
    const steps: number[] = [];
    for await (const tuple of db.saver.list(threadConfig(threadId))) {
      const step = tuple.metadata?.step as number;
      expect(tuple.checkpoint.channel_values.c169).toBe(step * 1000 + 169);
      expect(Object.keys(tuple.checkpoint.channel_values)).toHaveLength(170);
      steps.push(step);
    }
    expect(steps).toEqual(Array.from({ length: 100 }, (_, i) => 99 - i));
  });
});
