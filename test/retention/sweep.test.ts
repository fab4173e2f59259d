import { uuid6 } from "@langchain/langgraph-checkpoint";
import { DrizzleSaver, InvalidInputError, type SweepProgress } from "../../src/index.js";
import { DIALECTS, type DialectName } from "../helpers/databases.js";
import {
  CLEAN,
  HistoryWriter,
  integrity,
  newThreadId,
  storedThreads,
  threadConfig,
  useFreshSaver,
} from "../lifecycle/support.js";
import { ageThreads, checkpointIds, threadRows } from "./support.js";

describe.each(DIALECTS)("retention sweep on %s", (dialect: DialectName) => {
  const db = useFreshSaver(dialect);

  /** Threads of the test, each with a root chain and a subgraph chain. */
  async function threads(prefix: string, count: number, length = 3): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const id = newThreadId(prefix);
      const writer = new HistoryWriter(db.saver, id);
      await writer.chain(length);
      await writer.chain(2, { ns: `child:${uuid6(-1)}` });
      ids.push(id);
    }
    return ids;
  }

  /** Only this test's threads: the database is shared by the file's tests. */
  const left = async (ids: string[]) => (await storedThreads(db.raw)).filter((id) => ids.includes(id));

  it("deletes idle threads whole (every namespace, writes, blobs, the thread row), keeps active and pinned ones", async () => {
    const idle = await threads("sw-idle", 5);
    const active = await threads("sw-active", 2);
    const pinned = await threads("sw-pinned", 1);
    await ageThreads(db.raw, [...idle, ...pinned], 48);
    await db.saver.pinThread(pinned[0]);
    const progress: SweepProgress[] = [];
    const result = await db.saver.sweep({
      idleFor: "1d",
      strategy: "delete",
      batchSize: 2,
      onProgress: (p) => progress.push(p),
    });
    expect(result).toEqual({ scanned: 5, deleted: 5, pruned: 0, unchanged: 0, skipped: 0, dryRun: false });
    expect(progress.map((p) => p.scanned)).toEqual([2, 4, 5]);
    expect(await left([...idle, ...active, ...pinned])).toEqual([...active, ...pinned].sort());
    const rows = await threadRows(db.raw);
    for (const id of idle) expect(rows).not.toContain(id);
    for (const id of [...active, ...pinned]) expect(rows).toContain(id);
    for (const id of idle) expect(await db.saver.getTuple(threadConfig(id))).toBeUndefined();
    expect(await integrity(db.raw)).toEqual(CLEAN);
    await db.saver.unpinThread(pinned[0]);
    expect((await db.saver.sweep({ idleFor: "1d", strategy: "delete" })).deleted).toBe(1);
    expect(await left(pinned)).toEqual([]);
  });

  it("a recent checkpoint in a subgraph namespace keeps a thread whose root is idle", async () => {
    const [id] = await threads("sw-sub", 1);
    await ageThreads(db.raw, [id], 48);
    await new HistoryWriter(db.saver, id).chain(1, { ns: `late:${uuid6(-1)}` });
    expect((await db.saver.sweep({ idleFor: 86_400_000, strategy: "delete" })).deleted).toBe(0);
    expect(await left([id])).toEqual([id]);
    await ageThreads(db.raw, [id], 48);
    expect((await db.saver.sweep({ idleFor: 86_400_000, strategy: "delete" })).deleted).toBe(1);
    expect(await left([id])).toEqual([]);
    expect(await integrity(db.raw)).toEqual(CLEAN);
  });

  it("keep_latest keeps the newest keepLast checkpoints of each namespace, with their writes and blobs; a second pass changes nothing", async () => {
    const ids = await threads("sw-keep", 3, 6);
    await ageThreads(db.raw, ids, 48);
    const before = await Promise.all(ids.map((id) => checkpointIds(db.raw, id)));
    const result = await db.saver.sweep({ idleFor: "1d", strategy: "keep_latest", keepLast: 2 });
    expect(result).toMatchObject({ scanned: 3, deleted: 0, pruned: 3, skipped: 0 });
    for (const [i, id] of ids.entries()) {
      const after = await checkpointIds(db.raw, id);
      expect([...after.keys()].sort()).toEqual([...before[i].keys()].sort());
      for (const [ns, list] of before[i]) expect(after.get(ns)).toEqual(list.slice(-2));
      const tuple = await db.saver.getTuple(threadConfig(id));
      expect(tuple?.checkpoint.channel_values.step).toBe("c5");
      expect(tuple?.pendingWrites).toEqual([["task-c5", "step", "after c5"]]);
    }
    expect(await integrity(db.raw)).toEqual(CLEAN);
    // One thread per batch, all three with the same updated_at: the scan's cursor moves past each exactly once.
    expect(await db.saver.sweep({ idleFor: "1d", strategy: "keep_latest", keepLast: 2, batchSize: 1 })).toMatchObject({
      scanned: 3,
      pruned: 0,
      unchanged: 3,
    });
  });

  it("dryRun counts the idle threads and changes nothing; the saver's retention option is the default policy", async () => {
    const ids = await threads("sw-dry", 2);
    await ageThreads(db.raw, ids, 100);
    const listed: [string, string][] = [];
    const dry = await db.saver.sweep({
      idleFor: "90h",
      strategy: "delete",
      dryRun: true,
      onThread: (threadId, outcome) => listed.push([threadId, outcome]),
    });
    expect(dry.scanned).toBeGreaterThanOrEqual(2);
    expect(listed).toHaveLength(dry.scanned);
    for (const id of ids) expect(listed).toContainEqual([id, "deleted"]);
    expect(dry).toMatchObject({ deleted: 0, pruned: 0, dryRun: true });
    expect(await left(ids)).toEqual(ids.sort());
    const configured = await DrizzleSaver.fromUrl(db.url, { retention: { idleFor: "99h", strategy: "delete" } });
    try {
      expect((await configured.sweep()).deleted).toBeGreaterThanOrEqual(2);
    } finally {
      await configured.close();
    }
    expect(await left(ids)).toEqual([]);
  });

  it("pinning survives puts; expireThreads leaves pinned threads; pinning a thread without checkpoints is refused", async () => {
    const [id] = await threads("sw-pin", 1);
    await db.saver.pinThread(id);
    await new HistoryWriter(db.saver, id).chain(1);
    await ageThreads(db.raw, [id], 48);
    await db.saver.expireThreads({ idleSince: new Date(Date.now() - 3_600_000) });
    await db.saver.sweep({ idleFor: "1h", strategy: "delete" });
    expect(await left([id])).toEqual([id]);
    await expect(db.saver.pinThread("sw-no-such-thread")).rejects.toThrow(InvalidInputError);
    await expect(db.saver.unpinThread("sw-no-such-thread")).rejects.toThrow(/has no checkpoints/);
    await db.saver.unpinThread(id);
    expect(await db.saver.expireThreads({ idleSince: new Date(Date.now() - 3_600_000) })).toBeGreaterThanOrEqual(1);
    expect(await left([id])).toEqual([]);
  });

  it("prune keepLast keeps the newest n of each namespace; keepLast is checked", async () => {
    const [id] = await threads("sw-prune", 1, 5);
    const before = await checkpointIds(db.raw, id);
    await db.saver.prune([id], { strategy: "keep_latest", keepLast: 3 });
    const after = await checkpointIds(db.raw, id);
    for (const [ns, list] of before) expect(after.get(ns)).toEqual(list.slice(-3));
    expect(await integrity(db.raw, [id])).toEqual(CLEAN);
    await db.saver.prune([id]);
    for (const list of (await checkpointIds(db.raw, id)).values()) expect(list).toHaveLength(1);
    for (const keepLast of [0, -1, 1.5, Number.NaN]) {
      await expect(db.saver.prune([id], { keepLast })).rejects.toThrow(InvalidInputError);
    }
    await expect(db.saver.prune([id], { strategy: "delete", keepLast: 2 })).rejects.toThrow(InvalidInputError);
    expect(await left([id])).toEqual([id]);
  });

  it("invalid retention options are an InvalidInputError in the constructor; sweep needs a policy", async () => {
    const bad: unknown[] = [
      { idleFor: "30x", strategy: "delete" },
      { idleFor: 0, strategy: "delete" },
      { idleFor: -5, strategy: "delete" },
      { idleFor: Number.POSITIVE_INFINITY, strategy: "delete" },
      { strategy: "delete" },
      { idleFor: "30d" },
      { idleFor: "30d", strategy: "archive" },
      { idleFor: "30d", strategy: "keep_latest", keepLast: 0 },
      { idleFor: "30d", strategy: "delete", keepLast: 2 },
      { idleFor: "30d", strategy: "delete", every: "1h" },
      "30d",
    ];
    for (const retention of bad) {
      await expect(
        DrizzleSaver.fromUrl(db.url, { retention: retention as { idleFor: string; strategy: "delete" } }),
      ).rejects.toThrow(InvalidInputError);
    }
    await expect(db.saver.sweep()).rejects.toThrow(/no retention policy/);
    await expect(db.saver.sweep({ idleFor: "1d", strategy: "delete", batchSize: 0 })).rejects.toThrow(
      InvalidInputError,
    );
    const good = await DrizzleSaver.fromUrl(db.url, {
      retention: { idleFor: "1d12h", strategy: "keep_latest", keepLast: 3 },
    });
    await good.close();
  });
});
