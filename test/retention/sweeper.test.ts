import { join } from "node:path";
import { DrizzleSaver, InvalidInputError, type SweepResult } from "../../src/index.js";
import { DIALECTS, type DialectName, freshDatabaseUrl } from "../helpers/databases.js";
import { HistoryWriter, withFreshSaver } from "../lifecycle/support.js";
import { expectExitsOnItsOwn, sleep } from "../reliability/helpers.js";
import { ageThreads } from "./support.js";

describe.each(DIALECTS)("startSweeper on %s", (dialect: DialectName) => {
  it("sweeps at once; stop() waits for the pass in progress and no pass follows", async () => {
    await withFreshSaver(dialect, async ({ saver, raw }) => {
      const ids: string[] = [];
      for (let i = 0; i < 60; i++) {
        const id = `sweeper-${i}`;
        await new HistoryWriter(saver, id).chain(2);
        ids.push(id);
      }
      await ageThreads(raw, ids, 48);
      const results: SweepResult[] = [];
      let batches = 0;
      let stopping: Promise<void> | undefined;
      const handle = saver.startSweeper({
        intervalMs: 50,
        idleFor: "1d",
        strategy: "delete",
        batchSize: 5,
        onProgress: () => {
          batches++;
          // Stop in the middle of the first pass: it must still finish before stop() resolves.
          if (batches === 2) stopping = handle.stop();
        },
        onSweep: (result) => results.push(result),
      });
      while (stopping === undefined) await sleep(5);
      await stopping;
      expect(results).toHaveLength(1);
      expect(results[0].deleted).toBe(60);
      const left = await raw.query("select count(*) as n from checkpoint_threads");
      expect(Number(left[0].n)).toBe(0);
      await sleep(150);
      expect(results).toHaveLength(1);
      await handle.stop();
    });
  });

  it("a failing pass goes to onError (by default console.error), never to an unhandled rejection, and the next pass runs", async () => {
    await withFreshSaver(dialect, async ({ saver, raw }) => {
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown) => unhandled.push(reason);
      process.on("unhandledRejection", onUnhandled);
      const logged = vi.spyOn(console, "error").mockImplementation(() => {});
      try {
        await raw.query("alter table checkpoint_threads rename to checkpoint_threads_away");
        const errors: unknown[] = [];
        const explicit = saver.startSweeper({
          intervalMs: 20,
          idleFor: 1000,
          strategy: "delete",
          onError: (error) => {
            errors.push(error);
            throw new Error("a throwing onError is dropped too");
          },
        });
        const byDefault = saver.startSweeper({ intervalMs: 20, idleFor: 1000, strategy: "delete" });
        while (errors.length < 2 || logged.mock.calls.length < 2) await sleep(10);
        await explicit.stop();
        await byDefault.stop();
        expect(String(logged.mock.calls[0][0])).toMatch(/retention sweep failed/);
        await raw.query("alter table checkpoint_threads_away rename to checkpoint_threads");
        const results: SweepResult[] = [];
        const recovered = saver.startSweeper({
          intervalMs: 20,
          idleFor: 1000,
          strategy: "delete",
          onSweep: (result) => results.push(result),
        });
        while (results.length < 1) await sleep(10);
        await recovered.stop();
        await sleep(50);
        expect(unhandled).toEqual([]);
      } finally {
        logged.mockRestore();
        process.off("unhandledRejection", onUnhandled);
      }
    });
  });

  it("passes repeat after intervalMs; close() stops the saver's sweepers; bad options are an InvalidInputError", async () => {
    await withFreshSaver(dialect, async ({ url }) => {
      const saver = await DrizzleSaver.fromUrl(url, { retention: { idleFor: "7d", strategy: "keep_latest" } });
      const passes: SweepResult[] = [];
      saver.startSweeper({ intervalMs: 10, onSweep: (result) => passes.push(result) });
      while (passes.length < 2) await sleep(5);
      await saver.close();
      const after = passes.length;
      await sleep(60);
      expect(passes.length).toBe(after);
      const plain = await DrizzleSaver.fromUrl(url);
      try {
        expect(() => plain.startSweeper({ intervalMs: 10 })).toThrow(/no retention policy/);
        expect(() => plain.startSweeper({ intervalMs: -1, idleFor: "1d", strategy: "delete" })).toThrow(
          InvalidInputError,
        );
        expect(() => plain.startSweeper({ intervalMs: 10, idleFor: "1d", strategy: "delete", keepLast: 2 })).toThrow(
          InvalidInputError,
        );
      } finally {
        await plain.close();
      }
    });
  });
});

describe("startSweeper's timer", () => {
  it("never keeps the process alive", async () => {
    const url = await freshDatabaseUrl("sqlite");
    const setup = await DrizzleSaver.fromUrl(url);
    await setup.setup();
    await setup.close();
    await expectExitsOnItsOwn(join("test/retention/workers", "idle-sweeper.ts"), { url });
  }, 30_000);
});
