/**
 * Removals of one thread running at once with its writers: deleteThread, prune
 * ("keep_latest") and deleteForRuns on the same four threads while three writers extend
 * them. Each removal first locks the thread's row, as a put does, so two removals of one
 * thread wait for each other instead of taking its tables' rows in different orders.
 * Before, PostgreSQL broke several deadlocks a second between prune and the others (each
 * a second's stall of the thread's writers, the deadlock timeout, then a retry). What may
 * reach a writer is only MissingParentError (its checkpoint removed meanwhile).
 */
import { type CheckpointMetadata, emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { MissingParentError } from "../../src/index.js";
import { DIALECTS, freshSaver } from "../helpers/databases.js";
import { openRaw } from "../helpers/raw.js";

const THREADS = ["t0", "t1", "t2", "t3"];
const WRITERS = 3;
const ROUNDS = 60;

describe.each(DIALECTS)("removals racing writers on %s", (dialect) => {
  it("never deadlock, and fail no caller", async () => {
    const { saver, url } = await freshSaver(dialect);
    const failures: unknown[] = [];
    let writersDone = false;
    let step = 0;
    const thread = (i: number) => THREADS[i % THREADS.length];
    const write = async (round: number) => {
      const thread_id = thread(round);
      const latest = await saver.getTuple({ configurable: { thread_id } });
      step += 1;
      const checkpoint = {
        ...emptyCheckpoint(),
        id: uuid6(step),
        channel_values: { n: step },
        channel_versions: { n: step },
      };
      const metadata: CheckpointMetadata & { run_id: string } = {
        source: "loop",
        step,
        parents: {},
        run_id: `run${step % 4}`,
      };
      const config = await saver.put(
        { configurable: { thread_id, checkpoint_ns: "", ...(latest && { checkpoint_id: latest.checkpoint.id }) } },
        checkpoint,
        metadata,
        { n: step },
      );
      await saver.putWrites(config, [["n", step]], `task${step % 3}`);
    };
    const repeat = async (call: (round: number) => Promise<unknown>, rounds?: number) => {
      for (let round = 0; rounds === undefined ? !writersDone : round < rounds; round++) {
        await call(round).catch((error: unknown) => {
          if (!(error instanceof MissingParentError)) failures.push(error);
        });
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    try {
      const writers = Array.from({ length: WRITERS }, (_, w) => repeat((round) => write(w + round), ROUNDS));
      const removers = [
        repeat((round) => saver.deleteThread(thread(round * 3))),
        repeat((round) => saver.prune([thread(round), thread(round + 2)], { strategy: "keep_latest", keepLast: 2 })),
        repeat((round) => saver.prune([thread(round + 1)], { strategy: "keep_latest", keepLast: 1 })),
        repeat((round) => saver.deleteForRuns([`run${round % 4}`])),
      ];
      await Promise.all(writers);
      writersDone = true;
      await Promise.all(removers);
      expect(failures).toEqual([]);
    } finally {
      await saver.close();
    }
    // None retried either: PostgreSQL counts the deadlocks it broke (flushed as the connections closed).
    if (dialect === "postgres") {
      const raw = await openRaw("postgres", url);
      try {
        const [row] = await raw.query("select deadlocks from pg_stat_database where datname = current_database()");
        expect(Number(row.deadlocks)).toBe(0);
      } finally {
        await raw.close();
      }
    }
  }, 120_000);
});
