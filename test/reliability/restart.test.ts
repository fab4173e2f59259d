import { describe, expect, it } from "vitest";
import { DrizzleSaver } from "../../src/index.js";
import { type ChainSpec, ChainWriter, checkChains } from "./chain.js";
import { CONNECTION_ERROR, describeError, type Message, report, SOAK, sleep, within } from "./helpers.js";
import { PRIVATE_SERVERS } from "./servers.js";

/**
 * The database server restarted (PostgreSQL `pg_ctl restart -m fast`, MariaDB shutdown and start) while
 * several writers keep putting checkpoints through one saver, as the workers of one application would. The
 * same saver must carry on once the server is back, and every acknowledged put and putWrites must be there,
 * whole. Private servers (servers.ts), since a restart of the shared ones would break other test runs; opt-in
 * with RELIABILITY_RESTART=1 like the restart in recovery.test.ts.
 */

/** What a client sees while the server is down or starting, besides a dropped connection. */
const SERVER_DOWN = /ECONNREFUSED|57P03|shutting down|starting up|not yet accepting/i;

const RESTART = process.env.RELIABILITY_RESTART === "1";

describe.skipIf(!RESTART).each(["postgres", "mysql"] as const)(
  "a database server restarted under writers (%s)",
  (dialect) => {
    it("the same saver recovers and every acknowledged write is there whole", async () => {
      const server = await PRIVATE_SERVERS[dialect]();
      const saver = await DrizzleSaver.fromUrl(server.url);
      const restarts = SOAK ? 6 : 2;
      const specs: ChainSpec[] = Array.from({ length: 3 }, (_, w) => ({
        threadId: `restart-${w}`,
        ns: "",
        channels: 3,
        size: 16 * 1024,
        label: `w${w}`,
      }));
      const events = specs.map(() => [] as Message[]);
      const errors = new Map<string, number>();
      const putsAfter = specs.map(() => 0);
      const restarted: string[] = [];
      let stop = false;
      try {
        await saver.setup();
        const loops = specs.map(async (spec, w) => {
          const writer = new ChainWriter(saver, spec, (m) => events[w].push(m));
          await writer.resume();
          while (!stop) {
            try {
              await writer.next();
              putsAfter[w] += 1;
            } catch (error) {
              const text = describeError(error);
              errors.set(text, (errors.get(text) ?? 0) + 1);
              // Like a worker that keeps its saver: continue from what the database has, once it answers.
              for (;;) {
                await sleep(100);
                try {
                  await writer.resume();
                  break;
                } catch {}
              }
            }
          }
        });
        const faults = (async () => {
          for (let r = 0; r < restarts; r++) {
            putsAfter.fill(0);
            while (putsAfter.some((n) => n < 5)) await sleep(50);
            restarted.push(await server.restart());
          }
          // Each writer goes on through the same saver after the last restart.
          putsAfter.fill(0);
          while (putsAfter.some((n) => n < 5)) await sleep(50);
          stop = true;
        })();
        await within(Promise.all([faults, ...loops]), 240_000, "writers across the restarts");

        const unexpected = [...errors.keys()].filter((text) => !CONNECTION_ERROR.test(text) && !SERVER_DOWN.test(text));
        expect(unexpected).toEqual([]);
        const { problems, figures } = await checkChains(server.url, specs, events);
        expect(problems).toEqual([]);
        report("server restarted under writers", dialect, {
          writers: specs.length,
          restarts: restarted.length,
          how: restarted[0],
          operationsFailed: [...errors.values()].reduce((sum, n) => sum + n, 0),
          putsAcknowledged: figures.acknowledged,
          putsCut: figures.cut,
          cutPutsThatLandedWhole: figures.cutButLanded,
          putWritesCut: figures.cutWrites,
          errorKinds: [...errors.keys()].map((text) => text.slice(0, 120)),
          lost: problems.length,
        });
      } finally {
        stop = true;
        try {
          await within(saver.close(), 30_000, "saver.close() after the restarts");
        } finally {
          await server.stop();
        }
      }
    }, 300_000);
  },
);
