import { MissingParentError } from "../../src/index.js";
import { DIALECTS, type DialectName, freshSaver } from "../helpers/databases.js";
import { openRaw } from "../lifecycle/support.js";
import { ChainWriter, checkChain } from "../reliability/chain.js";
import { type Child, expectCleanExit, type Message } from "../reliability/helpers.js";
import { ageThreads, chainSpecs, startSweepers } from "./support.js";

/**
 * Sweepers in several processes expire idle threads while writers resume some of them
 * (contested) and keep others busy (active). Afterwards: every idle thread is gone
 * whole; an active thread holds every acknowledged put and write; a contested thread
 * either holds them all (its put landed first and made it active) or is gone whole and
 * its writer's put failed with MissingParentError; no thread was deleted twice.
 */
const SWEEPERS = 3;
const IDLE = 40;
const CONTESTED = 30;
const ACTIVE = 6;
// Far beyond the writing window (a pass still running when it ends must not find a resumed thread idle).
const IDLE_FOR_MS = 6000;
const WRITE_MS = 1800;
const TABLES = ["checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_threads"];

describe.each(DIALECTS)("sweepers in several processes racing writers on %s", (dialect: DialectName) => {
  it.each(["sweep", "expire"] as const)(
    "%s: never loses an acknowledged write, never leaves a thread partial, never handles one thread twice",
    async (mode) => {
      const { saver, url } = await freshSaver(dialect);
      const raw = await openRaw(dialect, url);
      try {
        const specs = chainSpecs({ idle: IDLE, contested: CONTESTED, active: ACTIVE });
        const events = specs.map(() => [] as Message[]);
        const writers = specs.map((s, w) => new ChainWriter(saver, s, (m) => events[w].push(m)));
        for (const writer of writers) for (let step = 0; step < 3; step++) await writer.next();
        await ageThreads(
          raw,
          specs.filter((s) => !s.threadId.startsWith("active")).map((s) => s.threadId),
          1,
        );

        const children: Child[] = startSweepers(SWEEPERS, { url, idleForMs: IDLE_FOR_MS, durationMs: WRITE_MS, mode });
        for (const child of children) await child.waitFor((m) => m.kind === "ready", "ready");
        for (const child of children) child.send("go");

        const refused = new Set<string>();
        const end = Date.now() + WRITE_MS;
        await Promise.all(
          specs.map(async (s, w) => {
            if (s.threadId.startsWith("idle")) return;
            while (Date.now() < end) {
              try {
                await writers[w].next();
              } catch (error) {
                if (!(error instanceof MissingParentError)) throw error;
                refused.add(s.threadId);
                return;
              }
              await new Promise((resolve) => setTimeout(resolve, 5));
            }
          }),
        );
        for (const child of children) await expectCleanExit(child);

        const handled = children.flatMap((child) => child.messages.filter((m) => m.kind === "thread"));
        const deleted = new Map<string, number>();
        for (const m of handled) {
          if (m.outcome === "deleted") deleted.set(m.threadId as string, (deleted.get(m.threadId as string) ?? 0) + 1);
        }
        expect([...deleted.values()].filter((n) => n > 1)).toEqual([]);
        // expireThreads reports counts only: a thread handled twice would count twice.
        const expired = children.flatMap((c) => c.messages.filter((m) => m.kind === "expired"));
        const expiredTotal = expired.reduce((sum, m) => sum + Number(m.threads), 0);

        const rowsOf = async (threadId: string) => {
          let total = 0;
          for (const table of TABLES) {
            total += (await raw.query(`select 1 from ${table} where thread_id = ?`, [threadId])).length;
          }
          return total;
        };
        const problems: string[] = [];
        for (const [w, s] of specs.entries()) {
          const gone = (await rowsOf(s.threadId)) === 0;
          if (s.threadId.startsWith("idle")) {
            // Several passes ran: the last one (or an earlier) took every idle thread.
            if (!gone) problems.push(`${s.threadId}: idle, still stored`);
            if (mode === "sweep" && !deleted.has(s.threadId))
              problems.push(`${s.threadId}: no sweeper reports deleting it`);
            continue;
          }
          if (refused.has(s.threadId)) {
            if (!gone) problems.push(`${s.threadId}: its put was refused, yet rows remain`);
            continue;
          }
          if (gone) problems.push(`${s.threadId}: removed although every put succeeded`);
          else problems.push(...(await checkChain(saver, s, events[w])).problems);
        }
        expect(problems).toEqual([]);
        const removed = IDLE + refused.size;
        if (mode === "sweep") expect(deleted.size).toBe(removed);
        else expect(expiredTotal).toBe(removed);
        console.log(
          `${dialect} ${mode}: ${handled.length} thread turns by ${SWEEPERS} sweepers, ${mode === "sweep" ? deleted.size : expiredTotal} deleted, ` +
            `${refused.size} of ${CONTESTED} contested refused (MissingParentError), ` +
            `${handled.filter((m) => m.outcome === "skipped").length} skipped`,
        );
      } finally {
        await raw.close();
        await saver.close();
      }
    },
    60_000,
  );
});
