import { EXTRA_DRIVERS, type ExtraDriver, freshDriverSaver } from "../helpers/drivers.js";
import { HistoryWriter, threadConfig } from "../lifecycle/support.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Wide enough that "active", written right before each sweep, is never idle when the pass starts, however slow the driver. */
const IDLE_FOR_MS = 2500;

/** The sweep's claim (a locking read, then conditioned deletes) on every other driver. */
describe.each(EXTRA_DRIVERS)("retention through %s", (driver: ExtraDriver) => {
  it("sweeps idle threads (delete and keep_latest), keeps active and pinned ones", async () => {
    const { saver, database } = await freshDriverSaver(driver);
    try {
      const writers = new Map<string, HistoryWriter>();
      for (const id of ["idle-1", "idle-2", "kept", "pinned"]) {
        const writer = new HistoryWriter(saver, id);
        await writer.chain(4);
        await writer.chain(3, { ns: "child:1" });
        writers.set(id, writer);
      }
      await saver.pinThread("pinned");
      await sleep(IDLE_FOR_MS + 500);
      // Written again right before each sweep: always well within idleFor, however busy the machine.
      const active = new HistoryWriter(saver, "active");
      const touch = () => active.put({ values: { step: "again" } });
      await touch();
      const pruned = await saver.sweep({ idleFor: IDLE_FOR_MS, strategy: "keep_latest", keepLast: 2 });
      expect(pruned).toMatchObject({ scanned: 3, pruned: 3, skipped: 0 });
      const kept = [];
      for await (const tuple of saver.list(threadConfig("kept"))) kept.push(tuple.checkpoint.id);
      expect(kept).toHaveLength(4);
      await touch();
      const deleted = await saver.sweep({ idleFor: IDLE_FOR_MS, strategy: "delete", batchSize: 1 });
      expect(deleted).toMatchObject({ scanned: 3, deleted: 3 });
      for (const id of ["idle-1", "idle-2", "kept"]) expect(await saver.getTuple(threadConfig(id))).toBeUndefined();
      for (const id of ["pinned", "active"]) expect(await saver.getTuple(threadConfig(id))).toBeDefined();
      await saver.unpinThread("pinned");
      await touch();
      expect((await saver.sweep({ idleFor: IDLE_FOR_MS, strategy: "delete" })).deleted).toBe(1);
    } finally {
      await saver.close();
      await database.close();
    }
  });
});
