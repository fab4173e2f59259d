import { DIALECTS, type DialectName } from "../helpers/databases.js";
import { dumpTables, HistoryWriter, useFreshSaver } from "../lifecycle/support.js";
import { ageThreads } from "./support.js";

/**
 * Cut-offs far from now: an `idleFor` of thousands of years (or Number.MAX_VALUE), an
 * `idleSince` at the ends of the Date range. Every database gives the same answer, that
 * no thread (or every unpinned one) is idle; PostgreSQL used to fail with "timestamp out
 * of range" or "interval out of range" where SQLite and MariaDB answered.
 */
describe.each(DIALECTS)("retention cut-offs far from now on %s", (dialect: DialectName) => {
  const db = useFreshSaver(dialect);

  it("an idleFor longer than any thread has lived finds no thread, and changes nothing", async () => {
    await new HistoryWriter(db.saver, "far-old").chain(2);
    await ageThreads(db.raw, ["far-old"], 24 * 365 * 20);
    await new HistoryWriter(db.saver, "far-new").chain(2);
    const before = await dumpTables(db.raw);
    for (const idleFor of [1e13, 1e15, Number.MAX_SAFE_INTEGER, Number.MAX_VALUE, "100000w"]) {
      for (const strategy of ["delete", "keep_latest"] as const) {
        for (const dryRun of [true, false]) {
          const result = await db.saver.sweep({ idleFor, strategy, dryRun });
          expect(result, `sweep idleFor ${idleFor} ${strategy} dryRun ${dryRun}`).toMatchObject({ scanned: 0 });
        }
      }
    }
    for (const ms of [-8.64e15, -1e15, -62_198_755_200_000]) {
      const idleSince = new Date(ms);
      expect(await db.saver.expireThreads({ idleSince, dryRun: true }), `dry run before ${ms}`).toBe(0);
      expect(await db.saver.expireThreads({ idleSince }), `expire before ${ms}`).toBe(0);
    }
    expect(await dumpTables(db.raw)).toEqual(before);
  });

  it("an idleSince at the end of the Date range expires every unpinned thread", async () => {
    await db.saver.pinThread("far-new");
    expect(await db.saver.expireThreads({ idleSince: new Date(8.64e15), dryRun: true })).toBe(1);
    expect(await db.saver.expireThreads({ idleSince: new Date(8.64e15) })).toBe(1);
    expect((await db.saver.searchThreads()).map((thread) => thread.threadId)).toEqual(["far-new"]);
  });
});
