import { InvalidInputError } from "../../src/index.js";
import { DIALECTS } from "../helpers/databases.js";
import { dumpTables, HistoryWriter, newThreadId, useFreshSaver } from "./support.js";

/**
 * Bad arguments to the lifecycle and retention calls: a clear InvalidInputError and
 * nothing written, even when the bad value comes after good ones in a list (a prune of
 * several threads used to handle the threads before a bad id, then fail).
 */
describe.each(DIALECTS)("lifecycle calls given bad input on %s", (dialect) => {
  const db = useFreshSaver(dialect);

  it("prune of several threads with one bad id among them changes none of them", async () => {
    const good = [newThreadId("bad-prune-a"), newThreadId("bad-prune-b")];
    for (const id of good) await new HistoryWriter(db.saver, id).chain(3);
    const before = await dumpTables(db.raw);
    const threadsBefore = await db.saver.searchThreads({ limit: 100 });
    for (const bad of ["", 7, null, undefined, "__transfer_staging__:x"]) {
      for (const strategy of ["keep_latest", "delete"] as const) {
        await expect(
          db.saver.prune([good[0], bad as string, good[1]], { strategy }),
          `${strategy} with ${String(bad)}`,
        ).rejects.toThrow(InvalidInputError);
        expect(await dumpTables(db.raw), `${strategy} with ${String(bad)}`).toEqual(before);
      }
    }
    expect(await db.saver.searchThreads({ limit: 100 })).toEqual(threadsBefore);
  });

  it("null options are an InvalidInputError, not a TypeError", async () => {
    const id = newThreadId("bad-options");
    await new HistoryWriter(db.saver, id).chain(2);
    const before = await dumpTables(db.raw);
    await expect(db.saver.prune([id], null as never)).rejects.toThrow(InvalidInputError);
    await expect(db.saver.prune([id], "delete" as never)).rejects.toThrow(InvalidInputError);
    await expect(db.saver.sweep(null as never)).rejects.toThrow(InvalidInputError);
    await expect(db.saver.sweep("30d" as never)).rejects.toThrow(InvalidInputError);
    const listed = async (options: unknown) => {
      for await (const _ of db.saver.listThreads(options as never)) {
        // draining
      }
    };
    await expect(listed(null)).rejects.toThrow(InvalidInputError);
    await expect(listed({ limt: 5 })).rejects.toThrow('listThreads: unknown option "limt"');
    expect(await dumpTables(db.raw)).toEqual(before);
  });

  it("a misspelt sweep option is refused rather than dropped (it would remove what was meant to be kept)", async () => {
    const id = newThreadId("bad-key");
    await new HistoryWriter(db.saver, id).chain(3);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const before = await dumpTables(db.raw);
    const typo = { idleFor: 1, strategy: "keep_latest", keeplast: 3 } as never;
    await expect(db.saver.sweep(typo)).rejects.toThrow(/unknown option "keeplast"/);
    expect(() => db.saver.startSweeper({ intervalMs: 60_000, ...(typo as object) } as never)).toThrow(
      /unknown option "keeplast"/,
    );
    expect(() =>
      db.saver.startSweeper({ intervalMs: 60_000, idleFor: 1, strategy: "delete", dryRun: true } as never),
    ).toThrow(InvalidInputError);
    expect(await dumpTables(db.raw)).toEqual(before);
  });

  it("an unknown option of prune or expireThreads is refused rather than dropped", async () => {
    const id = newThreadId("bad-key-prune");
    await new HistoryWriter(db.saver, id).chain(3);
    const before = await dumpTables(db.raw);
    await expect(db.saver.prune([id], { keep_last: 3 } as never)).rejects.toThrow(/unknown option "keep_last"/);
    const expire = { idleSince: new Date(Date.now() + 60_000), strategy: "keep_latest", keepLast: 3 } as never;
    await expect(db.saver.expireThreads(expire)).rejects.toThrow(/unknown option "keepLast"/);
    await expect(db.saver.expireThreads(null as never)).rejects.toThrow(InvalidInputError);
    expect(await dumpTables(db.raw)).toEqual(before);
  });
});
