/**
 * Every kind of call at once, from several processes on one database: graph steps on
 * shared threads (puts that keep channels, so they rely on their parent), pending
 * writes, deleteThread, prune, deleteForRuns, copies to contended targets, sweeps,
 * expiry, pins, filtered listings and store batches on shared namespaces; encrypted,
 * with a rekey beside them. A caller may only get the documented answers to a genuine
 * race: MissingParentError (its checkpoint removed meanwhile), a copy's "target thread is
 * not empty", a copy or pin of a thread removed meanwhile. Never a deadlock, a lock timeout, a
 * WriteConflictError or a driver's error; and on PostgreSQL (whose counter is per
 * database) not even a deadlock retried inside the saver. This mix found the put taking
 * its parent's lock before its thread's row (put-lock-order.test.ts).
 */
import { describe, expect, it } from "vitest";
import { DIALECTS, freshSaver } from "../helpers/databases.js";
import { pgDeadlocks } from "../helpers/raw.js";
import { expectCleanExit, report, SOAK, startChild, WORKERS } from "./helpers.js";
import type { MixArgs } from "./workers/mix.js";

const PROCESSES = 3;
const MS = SOAK ? 120_000 : 8_000;
const KEYS = { k1: Buffer.alloc(32, 1), k2: Buffer.alloc(32, 2) };

/** The documented answers to a race, by call (the worker's "<call>: <error>" keys). */
const EXPECTED = [
  /^(step|step \(own thread\)|putWrites): MissingParentError: /,
  // Its cause, if any, is the key violation or the re-sealing the other copy's rows made fail; a
  // source found empty is said as such, not as a full target.
  /^copyThread: InvalidInputError: copyThread: target thread "…" is not empty; nothing was copied( <- (?!InvalidInputError)[\s\S]*)?$/,
  /^copyThread: InvalidInputError: copyThread: source thread "…" has no checkpoints; nothing was copied$/,
  /^(pinThread|unpinThread): InvalidInputError: (pinThread|unpinThread): thread "…" has no checkpoints$/,
];

describe.each(DIALECTS)(`every kind of call at once from ${PROCESSES} processes on %s`, (dialect) => {
  it.each([false, true])(
    "encrypted: %s",
    async (encrypted) => {
      const { saver, url } = await freshSaver(
        dialect,
        encrypted ? { encryption: { keys: KEYS, activeKeyId: "k1" } } : {},
      );
      await saver.close();
      const before = dialect === "postgres" ? await pgDeadlocks(url) : 0;
      const children = Array.from({ length: PROCESSES }, (_, proc) =>
        startChild(`${WORKERS}/mix.ts`, { url, proc, ms: MS, loops: 4, encrypted } satisfies MixArgs),
      );
      for (const child of children) await child.waitFor((m) => m.kind === "ready", "ready");
      for (const child of children) child.send("go");
      for (const child of children) await expectCleanExit(child);

      const counts: Record<string, number> = {};
      const errors: Record<string, number> = {};
      for (const child of children) {
        const done = child.messages.find((m) => m.kind === "done") as unknown as {
          counts: Record<string, number>;
          errors: Record<string, number>;
        };
        for (const [name, n] of Object.entries(done.counts)) counts[name] = (counts[name] ?? 0) + n;
        for (const [name, n] of Object.entries(done.errors)) errors[name] = (errors[name] ?? 0) + n;
      }
      const retried = dialect === "postgres" ? (await pgDeadlocks(url)) - before : undefined;
      report("every kind of call at once", dialect, {
        encrypted,
        processes: PROCESSES,
        ms: MS,
        counts,
        errors,
        retried,
      });
      expect(Object.keys(errors).filter((error) => !EXPECTED.some((expected) => expected.test(error)))).toEqual([]);
      expect(counts.step).toBeGreaterThan(0);
      if (dialect === "postgres") expect(retried).toBe(0);
    },
    120_000,
  );
});
