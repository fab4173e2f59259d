import { randomInt } from "node:crypto";
import { describe, expect, it } from "vitest";
import { DrizzleSaver } from "../../src/index.js";
import { DIALECTS, type DialectName, freshSaver } from "../helpers/databases.js";
import { buildStepsGraph, fullLog, graphConfig } from "./graph.js";
import {
  CONNECTION_ERROR,
  connectionKiller,
  describeError,
  expectCleanExit,
  report,
  SOAK,
  sleep,
  startChild,
  trackWrites,
  WORKERS,
  within,
} from "./helpers.js";
import { PRIVATE_SERVERS } from "./servers.js";
import type { GraphRunnerArgs } from "./workers/graph-runner.js";
import type { StormClientArgs } from "./workers/storm-client.js";

/**
 * A LangGraph graph survives its process being killed, or all its database
 * connections being dropped (what a server restart does to clients), and resumes
 * from its last checkpoint: no step lost, none applied twice, none re-run that a
 * checkpoint already holds. (Restarting the shared test servers would break other
 * test runs, so the server side of a restart is simulated by dropping every
 * connection of the saver's database; see RELIABILITY.md.)
 */

interface ResumePoint {
  /** Whether the thread has a checkpoint at all (a run killed before its first put commits has none). */
  hasCheckpoint: boolean;
  /** Steps the saved state holds: the last checkpoint plus the writes saved against it. */
  saved: number;
  /** The step a resumed run must execute first: the one after what is saved. */
  firstToRun: number;
}

/** Where a resumed run must start, from what the database holds now. */
async function resumePoint(saver: DrizzleSaver, threadId: string, steps: number): Promise<ResumePoint> {
  const tuple = await saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: "" } });
  const graph = buildStepsGraph(saver, steps, () => {});
  // getState applies the writes saved against the last checkpoint (a step that finished but whose
  // checkpoint did not commit): LangGraph does not run such a step again.
  const state = await graph.getState(graphConfig(threadId, steps));
  const log = (state.values as { log?: number[] }).log ?? [];
  expect(log).toEqual(fullLog(log.length)); // a prefix of the steps, each once
  return { hasCheckpoint: tuple !== undefined, saved: log.length, firstToRun: log.length + 1 };
}

/** Resumes the thread in this process and checks it runs exactly the missing steps, once each. */
async function resumeInProcess(saver: DrizzleSaver, threadId: string, steps: number) {
  const point = await resumePoint(saver, threadId, steps);
  const executed: number[] = [];
  const graph = buildStepsGraph(saver, steps, (index) => {
    executed.push(index);
  });
  // No checkpoint at all: the run never reached the database, so it starts again from its input.
  const result = await graph.invoke(point.hasCheckpoint ? null : { log: [] }, graphConfig(threadId, steps));
  expect(result.log).toEqual(fullLog(steps));
  expect(executed).toEqual(fullLog(steps).slice(point.firstToRun - 1));
  return { ...point, executed };
}

describe.each(DIALECTS)("a graph whose process is killed on %s", (dialect: DialectName) => {
  it("resumes at the step it was killed in (durability sync)", async () => {
    const { saver, url } = await freshSaver(dialect);
    const steps = 8;
    const hangAt = 5;
    try {
      const args: GraphRunnerArgs = { url, threadId: "hang", steps, hangAt, durability: "sync", stepMillis: 5 };
      const child = startChild(`${WORKERS}/graph-runner.ts`, args);
      await child.waitFor((m) => m.kind === "step" && m.index === hangAt, `step ${hangAt}`);
      child.process.kill("SIGKILL");
      await child.exited;
      // With sync durability every finished step is checkpointed before the next one starts.
      const resumed = await resumeInProcess(saver, "hang", steps);
      expect(resumed.hasCheckpoint).toBe(true);
      expect(resumed.saved).toBe(hangAt - 1);
      expect(resumed.executed[0]).toBe(hangAt);
      report("graph process killed inside a step", dialect, {
        steps,
        killedInStep: hangAt,
        resumedAtStep: resumed.executed[0],
        stepsRerun: 1,
        lost: 0,
      });
    } finally {
      await saver.close();
    }
  }, 180_000);

  it("resumes from its last checkpoint after kills at arbitrary moments", async () => {
    const { saver, url } = await freshSaver(dialect);
    const steps = 12;
    const rounds = SOAK ? 20 : 3;
    const figures: string[] = [];
    try {
      for (let round = 0; round < rounds; round++) {
        const threadId = `kill-${round}`;
        const args: GraphRunnerArgs = { url, threadId, steps, stepMillis: 30 };
        const child = startChild(`${WORKERS}/graph-runner.ts`, args);
        const at = 2 + randomInt(steps - 3);
        await child.waitFor((m) => m.kind === "step" && Number(m.index) >= at, `step ${at}`);
        await sleep(randomInt(30));
        child.process.kill("SIGKILL");
        await child.exited;
        const started = Math.max(...child.messages.filter((m) => m.kind === "step").map((m) => Number(m.index)));
        const resumed = await resumeInProcess(saver, threadId, steps);
        expect(resumed.saved).toBeLessThanOrEqual(started);
        figures.push(
          `killed in step ${started}, resumed at ${resumed.executed[0] ?? "end"}${resumed.hasCheckpoint ? "" : " (no checkpoint yet: restarted)"}`,
        );
      }
      report("graph process killed at random moments", dialect, { steps, kills: rounds, runs: figures, lost: 0 });
    } finally {
      await saver.close();
    }
  }, 180_000);
});

describe.each(["postgres", "mysql"] as const)("a graph whose connections are all dropped on %s", (dialect) => {
  it("runs to the end on the same saver, resuming from its last checkpoint after each failure", async () => {
    const { saver, url } = await freshSaver(dialect);
    const killer = await connectionKiller(dialect, url);
    const writes = trackWrites(saver);
    const steps = SOAK ? 60 : 16;
    const killAt = new Set(SOAK ? Array.from({ length: 15 }, (_, i) => 3 + i * 4) : [3, 7, 11, 14]);
    const killedAt = new Set<number>();
    const errors: string[] = [];
    let connectionsKilled = 0;
    let attempts = 0;
    let rerun = 0;
    let restarts = 0;
    // Sync durability: every finished step is checkpointed before the next one starts, so where a resumed run
    // starts is exact. (With the default async durability puts lag behind the steps.) A failed invoke may still
    // have a put in flight: the loop waits for it before reading the resume point.
    const config = graphConfig("drops", steps, "sync");
    try {
      let executed: number[] = [];
      const graph = buildStepsGraph(saver, steps, async (index) => {
        executed.push(index);
        if (killAt.has(index) && !killedAt.has(index)) {
          killedAt.add(index);
          // Inside the step: a put of the previous step may still be in flight on another connection.
          connectionsKilled += await killer.killAll();
        }
      });
      for (;;) {
        attempts += 1;
        if (attempts > killAt.size * 3 + 3)
          throw new Error(`no progress after ${attempts} attempts: ${errors.join("\n")}`);
        let point: ResumePoint = { hasCheckpoint: false, saved: 0, firstToRun: 1 };
        if (attempts > 1) {
          try {
            // The failed run's last put may still be running, and a session killed in its commit may still
            // finish it: read the resume point once both have settled.
            await writes.idle();
            await killer.waitForKilledToEnd();
            point = await resumePoint(saver, "drops", steps);
          } catch (error) {
            errors.push(describeError(error));
            continue;
          }
        }
        if (attempts > 1 && !point.hasCheckpoint) restarts += 1;
        executed = [];
        try {
          // A run whose first put failed has no checkpoint: it starts over from its input then.
          const result = await graph.invoke(point.hasCheckpoint ? null : { log: [] }, config);
          expect(result.log).toEqual(fullLog(steps));
          expect(executed[0]).toBe(point.firstToRun);
          break;
        } catch (error) {
          errors.push(describeError(error));
          if (executed.length > 0) expect(executed[0]).toBe(point.firstToRun);
          rerun += executed.length;
        }
      }
      expect(errors.filter((text) => !CONNECTION_ERROR.test(text))).toEqual([]);
      expect([...killedAt].sort((a, b) => a - b)).toEqual([...killAt].sort((a, b) => a - b));
      const state = await buildStepsGraph(saver, steps, () => {}).getState(config);
      expect((state.values as { log: number[] }).log).toEqual(fullLog(steps));
      expect(state.next).toEqual([]);
      report("graph with all connections dropped", dialect, {
        steps,
        dropRounds: killAt.size,
        connectionsKilled,
        invokeAttempts: attempts,
        failedCalls: errors.length,
        stepsRunInFailedAttempts: rerun,
        restartsWithoutCheckpoint: restarts,
        errorKinds: [...new Set(errors.map((text) => text.slice(0, 100)))],
        lost: 0,
      });
    } finally {
      await killer.close();
      // Closing must not hang because connections were dropped earlier.
      await within(saver.close(), 30_000, "saver.close() after dropped connections");
    }
  }, 180_000);
});

describe.each(["postgres", "mysql"] as const)(
  "a process whose connections are dropped again and again on %s",
  (dialect) => {
    it("neither crashes nor stays broken: the same saver works once the drops stop", async () => {
      const { saver, url } = await freshSaver(dialect);
      await saver.close();
      const killer = await connectionKiller(dialect, url);
      const rounds = SOAK ? 2_000 : 200;
      let killed = 0;
      try {
        const args: StormClientArgs = { url };
        const child = startChild(`${WORKERS}/storm-client.ts`, args);
        await child.waitFor((m) => m.kind === "ready", "ready");
        let exited = false;
        void child.exited.then(() => {
          exited = true;
        });
        // Connections are dropped at every stage of their life, including while a new one starts up.
        for (let round = 0; round < rounds && !exited; round++) {
          killed += await killer.killAll();
          await sleep(randomInt(8));
        }
        child.send("stop");
        await expectCleanExit(child);
        const done = child.messages.find((m) => m.kind === "done");
        expect(done).toBeDefined();
        report("connections dropped again and again", dialect, {
          dropRounds: rounds,
          connectionsKilled: killed,
          operationsOk: done?.ok,
          operationsFailed: done?.failed,
          errorKinds: done?.errorKinds,
          workedAfterwards: true,
          processCrashed: false,
        });
      } finally {
        await killer.close();
      }
    }, 180_000);
  },
);

/**
 * A real server restart while a graph runs, on private servers (servers.ts): the shared ones serve other
 * test runs. Opt-in with RELIABILITY_RESTART=1 (needs the server binaries and root); without it the client
 * side of a restart is what the "connections are all dropped" tests above exercise.
 */
if (process.env.RELIABILITY_RESTART === "1") {
  describe.each(["postgres", "mysql"] as const)("a database server restarted mid-graph (%s)", (dialect) => {
    it("the graph finishes on the same saver, resuming from its last checkpoint", async () => {
      const server = await PRIVATE_SERVERS[dialect]();
      const saver = await DrizzleSaver.fromUrl(server.url);
      const writes = trackWrites(saver);
      const steps = 12;
      const restartAt = new Set([4, 9]);
      const restartedAt = new Set<number>();
      const restarted: string[] = [];
      const errors: string[] = [];
      let attempts = 0;
      try {
        await saver.setup();
        const config = graphConfig("restart", steps, "sync"); // see the "connections are all dropped" test
        let executed: number[] = [];
        const graph = buildStepsGraph(saver, steps, async (index) => {
          executed.push(index);
          if (restartAt.has(index) && !restartedAt.has(index)) {
            restartedAt.add(index);
            restarted.push(await server.restart());
          }
        });
        for (;;) {
          attempts += 1;
          if (attempts > 10) throw new Error(`no progress after ${attempts} attempts: ${errors.join("\n")}`);
          let hasCheckpoint = false;
          let saved = 0;
          if (attempts > 1) {
            try {
              await writes.idle(); // the failed run's last put may still be running
              hasCheckpoint = (await saver.getTuple(config)) !== undefined;
              saved = ((await graph.getState(config)).values as { log?: number[] }).log?.length ?? 0;
            } catch (error) {
              errors.push(String(error));
              continue;
            }
          }
          executed = [];
          try {
            const result = await graph.invoke(hasCheckpoint ? null : { log: [] }, config);
            expect(result.log).toEqual(fullLog(steps));
            expect(executed[0]).toBe(saved + 1);
            break;
          } catch (error) {
            errors.push(error instanceof Error ? error.message.split("\n")[0] : String(error));
            if (executed.length > 0) expect(executed[0]).toBe(saved + 1);
          }
        }
        expect(restarted).toHaveLength(restartAt.size);
        const state = await graph.getState(config);
        expect((state.values as { log: number[] }).log).toEqual(fullLog(steps));
        report("server restarted mid-graph", dialect, {
          steps,
          restarts: restarted.length,
          how: restarted[0],
          invokeAttempts: attempts,
          failedCalls: errors.length,
          errors: errors.map((e) => e.slice(0, 100)),
          lost: 0,
        });
      } finally {
        try {
          await within(saver.close(), 30_000, "saver.close() after the restarts");
        } finally {
          await server.stop();
        }
      }
    }, 300_000);
  });
}
