import { type CheckpointMetadata, type CheckpointTuple, uuid6 } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { DrizzleSaver, MissingParentError } from "../../src/index.js";
import { DIALECTS, type DialectName, freshSaver } from "../helpers/databases.js";
import { channelValue, checkpointOf, describeError, openRaw, type RawDb, report, SOAK } from "./helpers.js";

/**
 * Writes racing the removal of the checkpoint they depend on, on two connections:
 * putWrites against deleteThread, put against prune ("keep_latest") and deleteForRuns.
 * The defined outcomes (RELIABILITY.md): the write lands whole before the removal and
 * is handled by it, or it lands whole beside it (a put newer than what a prune saw is
 * kept), or it fails with MissingParentError having written nothing. Never a checkpoint
 * with a missing value or parent, never writes or blobs that nothing refers to.
 */

const values = (a: string, b: string) => ({ a: channelValue(a, 100), b: channelValue(b, 100) });
const ITERATIONS = SOAK ? 200 : 20;

async function threadTuples(saver: DrizzleSaver, threadId: string): Promise<CheckpointTuple[]> {
  const tuples: CheckpointTuple[] = [];
  for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) tuples.push(tuple);
  return tuples;
}

/** Rows of the thread that nothing can read: writes of a missing checkpoint, blobs no checkpoint refers to. */
async function unreadableRows(raw: RawDb, saver: DrizzleSaver, threadId: string): Promise<string[]> {
  const tuples = await threadTuples(saver, threadId);
  const ids = new Set(tuples.map((t) => t.checkpoint.id));
  const referenced = new Set(
    tuples.flatMap((t) => Object.entries(t.checkpoint.channel_versions).map(([ch, v]) => `${ch}@${v}`)),
  );
  const problems: string[] = [];
  const writes = await raw.query("select distinct checkpoint_id from checkpoint_writes where thread_id = ?", [
    threadId,
  ]);
  for (const row of writes) {
    const id = Buffer.isBuffer(row.checkpoint_id) ? row.checkpoint_id.toString() : String(row.checkpoint_id);
    if (!ids.has(id)) problems.push(`writes of missing checkpoint ${id}`);
  }
  const blobs = await raw.query("select channel, version from checkpoint_blobs where thread_id = ?", [threadId]);
  for (const row of blobs) {
    if (!referenced.has(`${row.channel}@${row.version}`))
      problems.push(`unreferenced blob ${row.channel}@${row.version}`);
  }
  return problems;
}

/** Every checkpoint of the thread reads whole: the values it names, and a parent that exists. */
function brokenCheckpoints(tuples: CheckpointTuple[]): string[] {
  const ids = new Set(tuples.map((t) => t.checkpoint.id));
  const problems: string[] = [];
  for (const tuple of tuples) {
    const named = Object.keys(tuple.checkpoint.channel_versions).sort();
    const read = Object.keys(tuple.checkpoint.channel_values).sort();
    if (JSON.stringify(named) !== JSON.stringify(read))
      problems.push(`${tuple.checkpoint.id} reads ${read} of ${named}`);
    const parent = tuple.parentConfig?.configurable?.checkpoint_id as string | undefined;
    if (parent !== undefined && !ids.has(parent)) problems.push(`${tuple.checkpoint.id}: parent ${parent} is missing`);
  }
  return problems;
}

const settle = (promise: Promise<unknown>, ok: string) =>
  promise.then(
    () => ok,
    (error: unknown) => (error instanceof MissingParentError ? "refused" : `failed: ${describeError(error)}`),
  );

function count(outcomes: Map<string, number>, label: string) {
  outcomes.set(label, (outcomes.get(label) ?? 0) + 1);
}

describe.each(DIALECTS)("writes racing the removal of their checkpoint on %s", (dialect: DialectName) => {
  it("a putWrites after deleteThread is refused and writes nothing", async () => {
    const { saver, url } = await freshSaver(dialect);
    const raw = await openRaw(dialect, url);
    try {
      const versions = { a: "1.a", b: "1.b" };
      const saved = await saver.put(
        { configurable: { thread_id: "late-writes", checkpoint_ns: "" } },
        checkpointOf(uuid6(-1), values("a1", "b1"), versions),
        { source: "loop", step: 0, parents: {} },
        versions,
      );
      await saver.deleteThread("late-writes");
      await expect(saver.putWrites(saved, [["a", "late"]], "task")).rejects.toThrow(MissingParentError);
      expect(await raw.counts()).toEqual({ checkpoints: 0, blobs: 0, writes: 0 });
    } finally {
      await raw.close();
      await saver.close();
    }
  });

  it("putWrites racing deleteThread lands first and goes with the thread, or is refused", async () => {
    const { saver, url } = await freshSaver(dialect);
    const other = await DrizzleSaver.fromUrl(url);
    const raw = await openRaw(dialect, url);
    const outcomes = new Map<string, number>();
    try {
      for (let i = 0; i < ITERATIONS; i++) {
        const threadId = `writes-race-${i}`;
        const versions = { a: "1.a", b: "1.b" };
        const saved = await saver.put(
          { configurable: { thread_id: threadId, checkpoint_ns: "" } },
          checkpointOf(uuid6(-1), values("a1", "b1"), versions),
          { source: "loop", step: 0, parents: {} },
          versions,
        );
        const [result] = await Promise.all([
          settle(
            saver.putWrites(
              saved,
              [
                ["a", "w0"],
                ["b", "w1"],
              ],
              "task",
            ),
            "stored",
          ),
          other.deleteThread(threadId),
        ]);
        const left = await raw.query("select count(*) as n from checkpoint_writes where thread_id = ?", [threadId]);
        count(outcomes, `${result}, ${Number(left[0].n)} write rows left`);
      }
      report("putWrites racing deleteThread", dialect, {
        iterations: ITERATIONS,
        outcomes: Object.fromEntries(outcomes),
      });
      expect([...outcomes.keys()].filter((label) => !/^(stored|refused), 0 write rows left$/.test(label))).toEqual([]);
    } finally {
      await raw.close();
      await other.close();
      await saver.close();
    }
  });

  /**
   * C1 -> C2 -> C3 in one thread; channel b changes at C3, so b's value of C2 is referenced by C1 and C2 only.
   * The racing put forks from C2 (time travel) and keeps b: it relies on a value only removed checkpoints hold.
   */
  async function forkedThread(saver: DrizzleSaver, threadId: string, runOf: (step: number) => string) {
    let parent: string | undefined;
    const ids: string[] = [];
    const history = [
      { a: "1.a", b: "1.b" },
      { a: "2.a", b: "1.b" },
      { a: "3.a", b: "3.b" },
    ];
    for (const [step, versions] of history.entries()) {
      const previous = history[step - 1];
      const newVersions = Object.fromEntries(
        Object.entries(versions).filter(([channel, version]) => previous?.[channel as "a" | "b"] !== version),
      );
      const saved = await saver.put(
        { configurable: { thread_id: threadId, checkpoint_ns: "", ...(parent ? { checkpoint_id: parent } : {}) } },
        checkpointOf(uuid6(step), values(`a${versions.a}`, `b${versions.b}`), versions),
        { source: "loop", step, parents: {}, run_id: runOf(step) } as CheckpointMetadata,
        newVersions,
      );
      parent = saved.configurable?.checkpoint_id as string;
      ids.push(parent);
    }
    const fork = {
      config: { configurable: { thread_id: threadId, checkpoint_ns: "", checkpoint_id: ids[1] } },
      checkpoint: checkpointOf(uuid6(9), values("a2.fork", "b1.b"), { a: "2.fork", b: "1.b" }),
      newVersions: { a: "2.fork" },
    };
    return { ids, fork };
  }

  for (const removal of ["prune keep_latest", "deleteForRuns"] as const) {
    it(`a put forking from a checkpoint that ${removal} removes lands whole or is refused`, async () => {
      const { saver, url } = await freshSaver(dialect);
      const other = await DrizzleSaver.fromUrl(url);
      const raw = await openRaw(dialect, url);
      const outcomes = new Map<string, number>();
      const problems: string[] = [];
      try {
        for (let i = 0; i < ITERATIONS; i++) {
          const threadId = `${removal.split(" ")[0]}-race-${i}`;
          // deleteForRuns removes the run of C1 and C2; prune keeps C3 only.
          const { fork } = await forkedThread(saver, threadId, (step) => (step < 2 ? `old-${i}` : `new-${i}`));
          const put = settle(
            saver.put(fork.config, fork.checkpoint, { source: "fork", step: 1, parents: {} }, fork.newVersions),
            "landed",
          );
          const remove = removal === "deleteForRuns" ? other.deleteForRuns([`old-${i}`]) : other.prune([threadId]);
          const [result] = await Promise.all([put, remove]);
          const tuples = await threadTuples(saver, threadId);
          const found = tuples.find((t) => t.checkpoint.id === fork.checkpoint.id);
          count(outcomes, `put ${result}, fork ${found ? "kept" : "absent"}, ${tuples.length} checkpoints`);
          if (
            result === "landed" &&
            found &&
            JSON.stringify(found.checkpoint.channel_values) !== JSON.stringify(fork.checkpoint.channel_values)
          ) {
            problems.push(
              `${threadId}: the fork reads ${JSON.stringify(Object.keys(found.checkpoint.channel_values))}`,
            );
          }
          if (result === "refused" && found) problems.push(`${threadId}: a refused put left its checkpoint`);
          for (const problem of [...brokenCheckpoints(tuples), ...(await unreadableRows(raw, saver, threadId))]) {
            problems.push(`${threadId}: ${problem}`);
          }
        }
        report(`put racing ${removal}`, dialect, {
          iterations: ITERATIONS,
          outcomes: Object.fromEntries(outcomes),
          lost: problems.length,
        });
        expect(problems).toEqual([]);
        expect([...outcomes.keys()].filter((label) => label.includes("failed"))).toEqual([]);
      } finally {
        await raw.close();
        await other.close();
        await saver.close();
      }
    });
  }
});
