/**
 * Changes to a thread besides its writes, running at once with its writers on the same
 * four threads: deleteThread, prune ("keep_latest") and deleteForRuns; import --replace
 * beside removals; rekey beside deleteThread; copies beside a rekey. Each takes the thread's row first, as a put does,
 * so two of them wait for each other instead of taking the thread's rows of several
 * tables in different orders. Before, PostgreSQL broke several deadlocks a second between
 * a prune and the others, and between a rekey (one unit over the rows of several threads)
 * and deleteThread: each a second's stall of the thread's writers (the deadlock timeout),
 * then a retry; and a copy of a thread being written kept values sealed for the source,
 * unreadable in the copy (later, for a moment after the copy: a rekey meeting one failed).
 * What may reach a writer is only MissingParentError (its checkpoint removed meanwhile).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CheckpointMetadata, emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { DrizzleSaver, importThreads, MissingParentError } from "../../src/index.js";
import { DIALECTS, type DialectName, freshSaver } from "../helpers/databases.js";
import { pgDeadlocks } from "../helpers/raw.js";
import { writeSyntheticFile } from "../transfer/support.js";

/** Named as writeSyntheticFile names its threads (prefix "t"): an import replaces them. */
const THREADS = ["t-0", "t-1", "t-2", "t-3"];
const WRITERS = 3;
const ROUNDS = 60;
/** An import is slow (a connection of its own each): more rounds, so that imports meet removals. */
const IMPORT_ROUNDS = 1500;
/** A rekey's batch meets a deletion of one of its threads less often: more rounds. */
const REKEY_ROUNDS = 400;
const thread = (i: number) => THREADS[i % THREADS.length];
const KEYS = { k1: Buffer.alloc(32, 1), k2: Buffer.alloc(32, 2) };

/** One writer's graph step on `thread(round)`: a put after the thread's latest checkpoint, then a pending write. */
function writer(saver: DrizzleSaver) {
  let step = 0;
  return async (round: number) => {
    const thread_id = thread(round);
    const latest = await saver.getTuple({ configurable: { thread_id } });
    step += 1;
    const id = uuid6(step);
    const checkpoint = { ...emptyCheckpoint(), id, channel_values: { n: step }, channel_versions: { n: step } };
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
}

/** Runs the writers, and each of `others` until they are done; returns what reached a caller. */
async function race(
  write: (round: number) => Promise<void>,
  others: ((round: number) => Promise<unknown>)[],
  rounds = ROUNDS,
) {
  const failures: unknown[] = [];
  let writersDone = false;
  const repeat = async (call: (round: number) => Promise<unknown>, rounds?: number) => {
    for (let round = 0; rounds === undefined ? !writersDone : round < rounds; round++) {
      await call(round).catch((error: unknown) => {
        if (!(error instanceof MissingParentError)) failures.push(error);
      });
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  const writers = Array.from({ length: WRITERS }, (_, w) => repeat((round) => write(w + round), rounds));
  const running = others.map((other) => repeat(other));
  await Promise.all(writers);
  writersDone = true;
  await Promise.all(running);
  return failures;
}

/** Every tuple of the thread, pending writes included: reading each value opens it. */
async function readWhole(saver: DrizzleSaver, threadId: string): Promise<number> {
  let tuples = 0;
  for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) {
    expect(tuple.checkpoint.channel_values).toBeDefined();
    tuples += 1;
  }
  return tuples;
}

/** Runs `test` with a saver over a fresh database; closes it. */
async function withSaver(
  dialect: DialectName,
  test: (fresh: { saver: DrizzleSaver; url: string }) => Promise<void>,
): Promise<string> {
  const { saver, url } = await freshSaver(dialect);
  try {
    await test({ saver, url });
  } finally {
    await saver.close();
  }
  return url;
}

/**
 * Runs `test` with a saver sealing under k1 and a second one (the rekey's) under k2, over
 * one fresh database; closes both.
 */
async function withEncryptedPair(
  dialect: DialectName,
  test: (savers: { saver: DrizzleSaver; rekeyer: DrizzleSaver; url: string }) => Promise<void>,
): Promise<string> {
  const { saver, url } = await freshSaver(dialect, { encryption: { keys: KEYS, activeKeyId: "k1" } });
  const rekeyer = await DrizzleSaver.fromUrl(url, { encryption: { keys: KEYS, activeKeyId: "k2" } });
  try {
    await test({ saver, rekeyer, url });
  } finally {
    await rekeyer.close();
    await saver.close();
  }
  return url;
}

// Each race's timeout (300 s) is a hang guard, not a speed limit. The rounds are counted, so a slow or
// loaded machine takes longer (the import race took 90 s on MariaDB in a CI run and hit 120 s under load).
describe.each(DIALECTS)("changes to threads racing their writers on %s", (dialect) => {
  it("removals never deadlock, and fail no caller", async () => {
    const url = await withSaver(dialect, async ({ saver }) => {
      const failures = await race(writer(saver), [
        (round) => saver.deleteThread(thread(round * 3)),
        (round) => saver.prune([thread(round), thread(round + 2)], { strategy: "keep_latest", keepLast: 2 }),
        (round) => saver.prune([thread(round + 1)], { strategy: "keep_latest", keepLast: 1 }),
        (round) => saver.deleteForRuns([`run${round % 4}`]),
      ]);
      expect(failures).toEqual([]);
    });
    if (dialect === "postgres") expect(await pgDeadlocks(url)).toBe(0);
  }, 300_000);

  it("import --replace beside writers and removals never deadlocks, and fails no caller", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "lgcd-import-race-")), "threads.jsonl");
    await writeSyntheticFile(file, { threads: THREADS.length, checkpoints: 3, prefix: "t" });
    const url = await withSaver(dialect, async ({ saver, url }) => {
      const failures = await race(
        writer(saver),
        [
          (round) => saver.deleteThread(thread(round * 3)),
          (round) => saver.prune([thread(round)], { strategy: "keep_latest", keepLast: 1 }),
          async (round) => {
            const summary = await importThreads(url, { file, threadIds: [thread(round + 1)] }, { replace: true });
            if (summary.failed.length > 0) throw new Error(`import failed: ${JSON.stringify(summary.failed)}`);
          },
        ],
        IMPORT_ROUNDS,
      );
      expect(failures).toEqual([]);
    });
    if (dialect === "postgres") expect(await pgDeadlocks(url)).toBe(0);
  }, 300_000);

  it("rekey beside deleteThread never deadlocks, and fails no caller", async () => {
    const url = await withEncryptedPair(dialect, async ({ saver, rekeyer }) => {
      const failures = await race(
        writer(saver),
        [(round) => saver.deleteThread(thread(round * 3)), () => rekeyer.rekey({ batchSize: 50 })],
        REKEY_ROUNDS,
      );
      expect(failures).toEqual([]);
    });
    if (dialect === "postgres") expect(await pgDeadlocks(url)).toBe(0);
  }, 300_000);

  it("copies made while the source is written and rekeyed are whole: re-sealed for their thread", async () => {
    await withEncryptedPair(dialect, async ({ saver, rekeyer, url }) => {
      const copies: string[] = [];
      const failures = await race(writer(saver), [
        async (round) => {
          // A source the writers have not reached yet has no checkpoints: copyThread refuses it.
          if (!(await saver.getTuple({ configurable: { thread_id: thread(round) } }))) return;
          const target = `copy-${round}`;
          await saver.copyThread(thread(round), target);
          copies.push(target);
        },
        // A copy reads and re-seals its values holding the source's row: a rekey never
        // meets a copied value still sealed for the source.
        () => rekeyer.rekey({ batchSize: 50 }),
      ]);
      expect(failures).toEqual([]);
      // Every copied value opens for its copy: a rekey re-seals them all, and only the new key reads them.
      await rekeyer.rekey();
      const newKeyOnly = await DrizzleSaver.fromUrl(url, { encryption: { keys: { k2: KEYS.k2 }, activeKeyId: "k2" } });
      try {
        expect(copies.length).toBeGreaterThan(0);
        for (const copy of copies) await readWhole(newKeyOnly, copy);
      } finally {
        await newKeyOnly.close();
      }
    });
  }, 300_000);
});
