import { InvalidInputError } from "../../src/index.js";
import { DIALECTS, type DialectName } from "../helpers/databases.js";
import { HistoryWriter, useFreshSaver, useSecondSaver } from "../lifecycle/support.js";

/**
 * pinThread racing the first put of its thread: it pins the thread or fails with
 * "has no checkpoints", never resolves with the thread left unpinned (it used to when
 * the put landed between its update, which found no row, and its check that the row
 * exists), which would let a sweep remove a thread the application believes pinned.
 */
const ROUNDS = 40;

describe.each(DIALECTS)("pinThread racing a thread's first put on %s", (dialect: DialectName) => {
  const db = useFreshSaver(dialect);
  const second = useSecondSaver(db);

  it("resolves only when the thread is pinned", async () => {
    const outcomes = { pinned: 0, refused: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const threadId = `pin-race-${round}`;
      const [, pin] = await Promise.allSettled([
        new HistoryWriter(second.saver, threadId).chain(1),
        // A few microtasks later: the pin's statements go out while the put is under way.
        Promise.resolve().then(() => db.saver.pinThread(threadId)),
      ]);
      const summary = (await collect(db.saver.listThreads())).find((thread) => thread.threadId === threadId);
      if (pin.status === "fulfilled") {
        outcomes.pinned++;
        expect(summary?.pinned, `round ${round}: pinThread resolved`).toBe(true);
      } else {
        outcomes.refused++;
        expect(pin.reason).toBeInstanceOf(InvalidInputError);
        expect(summary?.pinned, `round ${round}: pinThread refused`).toBe(false);
      }
    }
    expect(outcomes.pinned + outcomes.refused).toBe(ROUNDS);
  });
});

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}
