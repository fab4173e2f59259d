import { DIALECTS, type DialectName } from "../helpers/databases.js";
import { HistoryWriter, storedThreads, useFreshSaver } from "../lifecycle/support.js";
import { ageThreads } from "./support.js";

/**
 * A sweep judges idleness once, when the pass starts: a thread written just before it is
 * kept however long the pass takes. (With a cutoff of "now minus idleFor" evaluated by each
 * batch, a slow pass deleted threads that were active when it began: seen under load.)
 */
const IDLE_FOR_MS = 3000;

/** Blocks this thread without spinning, as a slow batch would. */
function stall(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

describe.each(DIALECTS)("a sweep's cutoff on %s", (dialect: DialectName) => {
  const db = useFreshSaver(dialect);

  it("is fixed when the pass starts: a thread written just before a pass slower than idleFor is kept", async () => {
    const idle = ["cut-idle-1", "cut-idle-2"];
    for (const id of idle) await new HistoryWriter(db.saver, id).chain(2);
    await ageThreads(db.raw, idle, 48);
    await new HistoryWriter(db.saver, "cut-recent").chain(2);
    const swept: string[] = [];
    const result = await db.saver.sweep({
      idleFor: IDLE_FOR_MS,
      strategy: "delete",
      batchSize: 1,
      onThread: (threadId) => {
        // The first thread takes longer than idleFor: "cut-recent" is idle by the clock
        // when the next batches are read, but was not when the pass began.
        if (swept.push(threadId) === 1) stall(IDLE_FOR_MS + 500);
      },
    });
    expect(swept).toEqual(idle);
    expect(result).toMatchObject({ scanned: 2, deleted: 2 });
    expect(await storedThreads(db.raw)).toEqual(["cut-recent"]);
  });
});
