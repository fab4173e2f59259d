/**
 * Ordinary concurrency must never fail a call: many async writers on threads of their
 * own, the parallel tasks of one superstep writing to one checkpoint, and a sweep, a
 * prune and a deleteForRuns running beside them, on every dialect and driver; then
 * three processes doing the same on one database. Every call must succeed and every
 * acknowledged checkpoint and write read back exactly. (Lock conflicts the database
 * may still raise by nature are retried inside the saver; see RELIABILITY.md.)
 */
import { uuid6 } from "@langchain/langgraph-checkpoint";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DrizzleSaver } from "../../src/index.js";
import { DIALECTS, freshSaver } from "../helpers/databases.js";
import { EXTRA_DRIVERS, freshDriverSaver, TARGETS, type Target } from "../helpers/drivers.js";
import { type Acknowledged, runWriters, verifyAcknowledged } from "./async-writers.js";
import { checkpointOf, expectCleanExit, report, SOAK, startChild, WORKERS } from "./helpers.js";
import type { AsyncWritersArgs } from "./workers/async-writers.js";

const WRITERS = 16;
const STEPS = SOAK ? 25 : 6;
const TASKS = 12;
const PROCESSES = 3;

async function openSaver(target: Target): Promise<{ saver: DrizzleSaver; close: () => Promise<void> }> {
  if ((EXTRA_DRIVERS as readonly string[]).includes(target)) {
    const { saver, database } = await freshDriverSaver(target as (typeof EXTRA_DRIVERS)[number]);
    return { saver, close: async () => database.close() };
  }
  const { saver } = await freshSaver(target as (typeof DIALECTS)[number]);
  return { saver, close: () => saver.close() };
}

/** A chain of `steps` checkpoints in `threadId` with the given metadata. */
async function seedThread(
  saver: DrizzleSaver,
  threadId: string,
  steps: number,
  metadata: Record<string, unknown> = {},
) {
  let parent: string | undefined;
  for (let step = 0; step < steps; step++) {
    const version = saver.getNextVersion(step === 0 ? undefined : step);
    const checkpoint = checkpointOf(uuid6(step), { value: `${threadId}/${step}` }, { value: version });
    await saver.put(
      { configurable: { thread_id: threadId, checkpoint_ns: "", ...(parent ? { checkpoint_id: parent } : {}) } },
      checkpoint,
      { source: "loop", step, parents: {}, ...metadata },
      { value: version },
    );
    parent = checkpoint.id;
  }
  return parent as string;
}

async function checkpointsOf(saver: DrizzleSaver, threadId: string): Promise<number> {
  let count = 0;
  for await (const _ of saver.list({ configurable: { thread_id: threadId } })) count++;
  return count;
}

describe.each(TARGETS)("%s: writers at once never fail", (target) => {
  let saver: DrizzleSaver;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ saver, close } = await openSaver(target));
  });
  afterAll(async () => close?.());

  it(`${WRITERS} writers, ${TASKS} tasks of one superstep, and a sweep, prune and deleteForRuns beside them`, async () => {
    const idle = ["idle-0", "idle-1", "idle-2", "idle-3"];
    const doomed = ["doomed-0", "doomed-1"];
    for (const threadId of idle) await seedThread(saver, threadId, 2);
    for (const threadId of doomed) await seedThread(saver, threadId, 2, { run_id: "doomed-run" });
    await seedThread(saver, "pruned", 5);
    const superstep = await seedThread(saver, "superstep", 1);
    const superstepConfig = { configurable: { thread_id: "superstep", checkpoint_ns: "", checkpoint_id: superstep } };

    let beside: Promise<unknown[]> = Promise.resolve([]);
    const started = Date.now();
    const acknowledged = await runWriters(saver, "writer", WRITERS, STEPS, async (writers) => {
      // The sweep may remove only the idle threads: everything else is pinned (explicit
      // prune and deleteForRuns still remove pinned threads).
      for (const threadId of [...writers, ...doomed, "pruned", "superstep"]) await saver.pinThread(threadId);
      beside = Promise.all([
        saver.sweep({ idleFor: 1, strategy: "delete" }),
        saver.prune(["pruned"], { strategy: "keep_latest", keepLast: 1 }),
        saver.deleteForRuns(["doomed-run"]),
        ...Array.from({ length: TASKS }, (_, t) =>
          saver.putWrites(
            superstepConfig,
            [
              ["out", `task ${t}`],
              ["seen", t],
            ],
            `superstep-task-${t}`,
          ),
        ),
      ]);
    });
    const [sweep] = (await beside) as [{ deleted: number }];
    report("concurrent writers", target === "sqlite" || target === "postgres" || target === "mysql" ? target : "all", {
      target,
      writers: WRITERS,
      steps: STEPS,
      ms: Date.now() - started,
    });

    expect(acknowledged).toHaveLength(WRITERS * STEPS);
    expect(await verifyAcknowledged(saver, acknowledged)).toEqual([]);
    expect(sweep.deleted).toBe(idle.length);
    for (const threadId of [...idle, ...doomed]) expect(await checkpointsOf(saver, threadId)).toBe(0);
    expect(await checkpointsOf(saver, "pruned")).toBe(1);
    const tuple = await saver.getTuple(superstepConfig);
    const writes = (tuple?.pendingWrites ?? []).map(([task, channel, value]) => `${task}/${channel}/${value}`).sort();
    const expected = Array.from({ length: TASKS }, (_, t) => [
      `superstep-task-${t}/out/task ${t}`,
      `superstep-task-${t}/seen/${t}`,
    ])
      .flat()
      .sort();
    expect(writes).toEqual(expected);
  });
});

describe.each(DIALECTS)("%s: processes at once never fail", (dialect) => {
  it(`${PROCESSES} processes of ${WRITERS / 2} writers each on one database`, async () => {
    const { saver, url } = await freshSaver(dialect);
    try {
      const children = Array.from({ length: PROCESSES }, (_, p) =>
        startChild(`${WORKERS}/async-writers.ts`, {
          url,
          prefix: `proc-${p}`,
          writers: WRITERS / 2,
          steps: STEPS,
        } satisfies AsyncWritersArgs),
      );
      for (const child of children) await child.waitFor((m) => m.kind === "ready", "ready");
      for (const child of children) child.send("go");
      for (const child of children) await expectCleanExit(child);
      const acknowledged = children.flatMap((child) =>
        child.messages.filter((m) => m.kind === "ack").map((m) => m as unknown as Acknowledged & { kind: string }),
      );
      expect(acknowledged).toHaveLength(PROCESSES * (WRITERS / 2) * STEPS);
      expect(await verifyAcknowledged(saver, acknowledged)).toEqual([]);
    } finally {
      await saver.close();
    }
  });
});
