import { describe, expect, it } from "vitest";
import { DIALECTS } from "../helpers/databases.js";
import { newThreadId, threadConfig, useFreshSaver } from "../lifecycle/support.js";
import { checkpointOf, collect, loopMetadata, putValues } from "./support.js";

/** Which checkpoint is newest, and which comes next in a listing, is the database's order everywhere. */

describe.each(DIALECTS)("ordering on %s", (dialect) => {
  const db = useFreshSaver(dialect);

  it("lists namespaces that differ by a trailing space across a page boundary", async () => {
    const threadId = newThreadId("pad");
    // 99 newer checkpoints, then one id in both "sub " and "sub": rows 100 and 101 of the list.
    for (let i = 0; i < 99; i++) {
      await putValues(db.saver, threadConfig(threadId, "sub"), checkpointOf(`id-${String(900 + i)}`));
    }
    await putValues(db.saver, threadConfig(threadId, "sub "), checkpointOf("id-100"));
    await putValues(db.saver, threadConfig(threadId, "sub"), checkpointOf("id-100"));
    const listed: string[] = [];
    for await (const tuple of db.saver.list(threadConfig(threadId))) {
      listed.push(`${tuple.config.configurable?.checkpoint_id}|${tuple.config.configurable?.checkpoint_ns}`);
    }
    expect(listed).toHaveLength(101);
    expect(listed.slice(-2)).toEqual(["id-100|sub ", "id-100|sub"]);
  });

  it("prune keeps the checkpoint getTuple and list call the latest", async () => {
    for (const ids of [
      ["Ａ", "😀"],
      ["B", "a"],
      ["z", "é"],
    ]) {
      const threadId = newThreadId("prune-order");
      for (const id of ids) await putValues(db.saver, threadConfig(threadId), checkpointOf(id, { x: id }));
      const latest = await db.saver.getTuple(threadConfig(threadId));
      const [first] = await collect(db.saver.list(threadConfig(threadId), { limit: 1 }));
      expect(first.config.configurable?.checkpoint_id).toBe(latest?.config.configurable?.checkpoint_id);

      await db.saver.prune([threadId]);
      const left = await collect(db.saver.list(threadConfig(threadId)));
      expect(left.map((t) => t.config.configurable?.checkpoint_id)).toEqual([
        latest?.config.configurable?.checkpoint_id,
      ]);
      expect(left[0].checkpoint.channel_values).toEqual(latest?.checkpoint.channel_values);
    }
  });

  it("listThreads names the same latest checkpoint as getTuple", async () => {
    const threadId = newThreadId("threads-order");
    for (const id of ["Ａ", "😀"]) await putValues(db.saver, threadConfig(threadId), checkpointOf(id), loopMetadata(0));
    const latest = await db.saver.getTuple(threadConfig(threadId));
    const summaries = await collect(db.saver.listThreads());
    const summary = summaries.find((s) => s.threadId === threadId);
    expect(summary?.latestCheckpointId).toBe(latest?.config.configurable?.checkpoint_id);
  });
});
