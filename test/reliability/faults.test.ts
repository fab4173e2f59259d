import { randomInt } from "node:crypto";
import { type CheckpointTuple, uuid6 } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { DrizzleSaver, MissingParentError, type UrlDriver } from "../../src/index.js";
import { DIALECTS, type DialectName, freshSaver } from "../helpers/databases.js";
import { type ChainSpec, ChainWriter, checkChain, checkChains } from "./chain.js";
import {
  CONNECTION_ERROR,
  channelValue,
  checkpointOf,
  connectionKiller,
  describeError,
  type Message,
  openRaw,
  report,
  SOAK,
  sleep,
  startChild,
  WORKERS,
  within,
} from "./helpers.js";
import type { CrashWriterArgs } from "./workers/crash-writer.js";

/**
 * Faults in the middle of writes. A put is one statement (PostgreSQL), one
 * transaction (MySQL) or one BEGIN IMMEDIATE transaction (SQLite): whatever cuts it,
 * the checkpoint must be there whole (every channel value readable) or not at all.
 */

describe.each(DIALECTS)("a writer process killed in the middle of writing on %s", (dialect: DialectName) => {
  it(
    "leaves every acknowledged checkpoint and either all or nothing of the one it was writing",
    async () => {
      const { saver, url } = await freshSaver(dialect);
      const spec: ChainSpec = { threadId: "crash", ns: "", channels: 4, size: 256 * 1024, label: "" };
      const rounds = SOAK ? 40 : 6;
      const events: Message[] = [];
      let midPut = 0;
      try {
        for (let round = 0; round < rounds; round++) {
          const args: CrashWriterArgs = { ...spec, label: `r${round}`, url, maxPuts: 10_000 };
          const child = startChild(`${WORKERS}/crash-writer.ts`, args);
          // Let it acknowledge a few calls, then kill it: after a putWrites returned (so during the next put) on
          // even rounds, after a put returned (so during its putWrites) on odd ones, a little later or at once.
          const acks = 1 + randomInt(4);
          const after = round % 2 === 0 ? "writes" : "put";
          let seen = 0;
          await child.waitFor((m) => m.kind === after && ++seen >= acks, `${acks} acknowledged ${after} calls`);
          await sleep(randomInt(15));
          child.process.kill("SIGKILL");
          await child.exited;
          events.push(...child.messages);
          const last = child.messages.filter((m) => m.kind === "intent" || m.kind === "put").at(-1);
          if (last?.kind === "intent") midPut += 1;
        }
        const check = await checkChain(saver, spec, events);
        expect(check.problems).toEqual([]);
        if (dialect === "sqlite") {
          const raw = await openRaw(dialect, url);
          try {
            expect(await raw.query("pragma integrity_check")).toEqual([{ integrity_check: "ok" }]);
          } finally {
            await raw.close();
          }
        }
        report("writer process killed mid-write", dialect, {
          kills: rounds,
          killedBetweenPutStartAndAck: midPut,
          putsAcknowledged: check.acknowledged,
          putsCut: check.cut,
          cutPutsThatLandedWhole: check.cutButLanded,
          putWritesCut: check.cutWrites,
          checkpointsInThread: check.checkpointsInThread,
          lost: check.problems.length,
        });
      } finally {
        await saver.close();
      }
    },
    SOAK ? 1_800_000 : 180_000,
  );
});

/** postgres.js and mysql2 (fromUrl's defaults), and node-postgres's Pool. */
const DROPPED: [string, "postgres" | "mysql", UrlDriver | undefined][] = [
  ["postgres", "postgres", undefined],
  ["mysql", "mysql", undefined],
  ["pg", "postgres", "pg"],
];

describe.each(DROPPED)("connections dropped during puts on %s", (target, dialect, driver) => {
  it(
    "loses no acknowledged checkpoint, leaves no partial one, and the same saver recovers",
    async () => {
      const { saver, url } = await freshSaver(dialect, { driver });
      const killer = await connectionKiller(dialect, url);
      const writers = SOAK ? 6 : 3;
      const targetFailures = SOAK ? 100 : 12;
      const minPuts = SOAK ? 1_000 : 60;
      const maxPuts = SOAK ? 5_000 : 600;
      const specs: ChainSpec[] = Array.from({ length: writers }, (_, w) => ({
        threadId: `storm-${w}`,
        ns: "",
        channels: 3,
        size: 64 * 1024,
        label: `w${w}`,
      }));
      const events = specs.map(() => [] as Message[]);
      const errors = new Map<string, number>();
      let failures = 0;
      let puts = 0;
      let killed = 0;
      let killRounds = 0;
      let stop = false;
      const record = (error: unknown) => {
        failures += 1;
        const text = describeError(error);
        errors.set(text, (errors.get(text) ?? 0) + 1);
      };
      try {
        const loops = specs.map(async (spec, w) => {
          const writer = new ChainWriter(saver, spec, (m) => events[w].push(m));
          // Like a restarted worker: continue from what the database has, retrying while it fails (the
          // first kill can land before the first resume is done on a slow machine).
          const resume = async () => {
            for (;;) {
              try {
                return await writer.resume();
              } catch (error) {
                record(error);
              }
            }
          };
          await resume();
          while (!stop) {
            try {
              await writer.next();
              puts += 1;
            } catch (error) {
              record(error);
              await resume();
            }
          }
        });
        const storm = (async () => {
          while ((failures < targetFailures || puts < minPuts) && puts < maxPuts) {
            await sleep(20 + randomInt(120));
            killed += await killer.killAll();
            killRounds += 1;
            // The next kill only after a put has come through since this one: however slow the machine,
            // the writers make progress and the storm ends (kills every 20-140 ms starved them under load).
            const before = puts;
            while (puts === before && !stop) await sleep(5);
          }
          stop = true;
        })();
        await Promise.all([storm, ...loops]);

        // Every failure must be the dropped connection, not something the saver did.
        const unexpected = [...errors.keys()].filter((text) => !CONNECTION_ERROR.test(text));
        expect(unexpected).toEqual([]);
        expect(failures).toBeGreaterThan(0); // the faults did hit operations in flight

        const { problems, figures } = await checkChains(url, specs, events);
        expect(problems).toEqual([]);

        // The same saver, with no help: its pool replaces the dropped connections. The last kill may still
        // be in flight on the server, so wait until the server has ended the killed backends.
        await sleep(250);
        const after = new ChainWriter(saver, { ...specs[0], label: "after" }, () => {});
        await after.resume();
        await after.next();
        const tuple = await saver.getTuple({ configurable: { thread_id: specs[0].threadId, checkpoint_ns: "" } });
        expect(tuple?.metadata?.step).toBe(0);

        report("connections dropped during puts", dialect, {
          driver: target,
          concurrentWriters: writers,
          killRounds,
          connectionsKilled: killed,
          operationsFailed: failures,
          putsAcknowledged: figures.acknowledged,
          putsCut: figures.cut,
          cutPutsThatLandedWhole: figures.cutButLanded,
          putWritesCut: figures.cutWrites,
          errorKinds: [...errors.keys()].map((text) => text.slice(0, 120)),
          lost: problems.length,
        });
      } finally {
        stop = true;
        await killer.close();
        // Closing must not hang because connections were dropped earlier.
        await within(saver.close(), 30_000, "saver.close() after dropped connections");
      }
    },
    SOAK ? 1_800_000 : 240_000,
  );
});

describe.each(DIALECTS)("deleteThread racing a late put on %s", (dialect: DialectName) => {
  /**
   * The defined outcome: the thread is either empty (the put came first and was
   * deleted with it, or it came after and was refused with a MissingParentError) or it
   * holds the late checkpoint whole. It never holds a checkpoint whose channel values
   * were deleted under it.
   */
  const values = (a: string, b: string) => ({ a: channelValue(a, 100), b: channelValue(b, 100) });

  async function threadState(saver: DrizzleSaver, threadId: string): Promise<CheckpointTuple[]> {
    const tuples: CheckpointTuple[] = [];
    for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) tuples.push(tuple);
    return tuples;
  }

  /** A thread with one checkpoint holding channels a and b; returns what a late put would send next. */
  async function prepare(saver: DrizzleSaver, threadId: string) {
    const v1 = { a: String(saver.getNextVersion(undefined)), b: String(saver.getNextVersion(undefined)) };
    const first = await saver.put(
      { configurable: { thread_id: threadId, checkpoint_ns: "" } },
      checkpointOf(uuid6(-1), values("a1", "b1"), v1),
      { source: "loop", step: 0, parents: {} },
      v1,
    );
    // The next step changes only a: its put writes a's new value and refers to b's stored one.
    const v2 = { ...v1, a: String(saver.getNextVersion(v1.a as unknown as number)) };
    const late = checkpointOf(uuid6(-1), values("a2", "b1"), v2);
    return { first, late, newVersions: { a: v2.a } };
  }

  function outcome(tuples: CheckpointTuple[], lateId: string): string {
    if (tuples.length === 0) return "empty";
    const late = tuples.find((t) => t.checkpoint.id === lateId);
    if (
      tuples.length === 1 &&
      late &&
      JSON.stringify(late.checkpoint.channel_values) === JSON.stringify(values("a2", "b1"))
    ) {
      return "late put landed whole";
    }
    return `broken: ${tuples.length} checkpoint(s), channels ${JSON.stringify(tuples.map((t) => Object.keys(t.checkpoint.channel_values)))}`;
  }

  it("a put arriving after deleteThread is refused and leaves the thread empty", async () => {
    const { saver } = await freshSaver(dialect);
    try {
      const { first, late, newVersions } = await prepare(saver, "late");
      await saver.deleteThread("late");
      const put = saver.put(first, late, { source: "loop", step: 1, parents: {} }, newVersions);
      await expect(put).rejects.toThrow(MissingParentError);
      const result = outcome(await threadState(saver, "late"), late.id);
      report("deleteThread then late put", dialect, { outcome: result, putRefused: true });
      expect(result).toBe("empty");
    } finally {
      await saver.close();
    }
  });

  it("deleteThread and put racing from two connections never leave a partial checkpoint", async () => {
    const { saver, url } = await freshSaver(dialect);
    const other = await DrizzleSaver.fromUrl(url);
    const iterations = SOAK ? 200 : 30;
    const outcomes = new Map<string, number>();
    try {
      for (let i = 0; i < iterations; i++) {
        const threadId = `race-${i}`;
        const { first, late, newVersions } = await prepare(saver, threadId);
        const put = saver.put(first, late, { source: "loop", step: 1, parents: {} }, newVersions).then(
          () => "put ok",
          (error: unknown) =>
            error instanceof MissingParentError ? "put refused" : `put failed: ${describeError(error)}`,
        );
        const [putResult] = await Promise.all([put, other.deleteThread(threadId)]);
        const label = `${outcome(await threadState(saver, threadId), late.id)} (${putResult})`;
        outcomes.set(label, (outcomes.get(label) ?? 0) + 1);
      }
      report("deleteThread racing put", dialect, { iterations, outcomes: Object.fromEntries(outcomes) });
      expect([...outcomes.keys()].filter((label) => !/^empty \(put (ok|refused)\)$/.test(label))).toEqual([]);
    } finally {
      await other.close();
      await saver.close();
    }
  });
});
