import { InvalidInputError } from "../../src/index.js";
import { DIALECTS } from "../helpers/databases.js";
import { HistoryWriter, newThreadId, threadView, useFreshSaver, useSecondSaver } from "./support.js";

/**
 * copyThread racing a writer of its target, another copy to the same target, or a put
 * starting that thread: the target ends as one of them wrote it, never mixed, and the
 * loser gets the documented InvalidInputError ("target thread is not empty"), not the
 * database's unique-key violation (what it got before).
 */
const ROUNDS = 6;

describe.each(DIALECTS)("copyThread racing writers of its target on %s", (dialect) => {
  const db = useFreshSaver(dialect);
  const second = useSecondSaver(db);

  it("two copies to one target: one lands whole, the other is an InvalidInputError", async () => {
    const source = newThreadId("copy-race-src");
    await new HistoryWriter(db.saver, source).chain(12);
    const expected = await threadView(db.saver, source);
    for (let round = 0; round < ROUNDS; round++) {
      const target = newThreadId("copy-race-dst");
      const outcomes = await Promise.allSettled([
        db.saver.copyThread(source, target),
        second.saver.copyThread(source, target),
      ]);
      const failures = outcomes.flatMap((outcome) => (outcome.status === "rejected" ? [outcome.reason] : []));
      expect(failures.length, `round ${round}`).toBeLessThanOrEqual(1);
      for (const failure of failures) expect(failure, String(failure)).toBeInstanceOf(InvalidInputError);
      expect(await threadView(db.saver, target)).toEqual(expected);
    }
  });

  it("a copy racing the first put of its target: the put's thread or the copy, and a clear error", async () => {
    const source = newThreadId("copy-put-src");
    await new HistoryWriter(db.saver, source).chain(12);
    const copied = await threadView(db.saver, source);
    for (let round = 0; round < ROUNDS; round++) {
      const target = newThreadId("copy-put-dst");
      const [copy] = await Promise.allSettled([
        db.saver.copyThread(source, target),
        new HistoryWriter(second.saver, target).chain(1),
      ]);
      const view = await threadView(db.saver, target);
      if (copy.status === "rejected") {
        expect(copy.reason, String(copy.reason)).toBeInstanceOf(InvalidInputError);
        expect(view).toHaveLength(1);
      } else {
        // The put came after the copy: the copy whole, and the put's checkpoint beside it.
        expect(view.length).toBe(copied.length + 1);
      }
    }
  });
});
