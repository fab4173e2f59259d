/**
 * Closing a saver or store that `fromUrl` opened while its calls are still running: every
 * call settles (done or failed, never left waiting), `close()` returns, no rejection goes
 * unhandled, and a call made after `close()` fails instead of waiting.
 */
import { uuid6 } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { DrizzleSaver, DrizzleStore, type UrlDriver } from "../../src/index.js";
import { type DialectName, freshDatabaseUrl } from "../helpers/databases.js";
import { checkpointOf, within } from "../reliability/helpers.js";

const DRIVERS: [DialectName, UrlDriver][] = [
  ["postgres", "postgres"],
  ["postgres", "pg"],
  ["mysql", "mysql2"],
  ["sqlite", "better-sqlite3"],
  ["sqlite", "libsql"],
];

/** More calls than a pool has connections (10 by default), so some wait for one when close() comes. */
const CALLS = 40;

const putOn = (saver: DrizzleSaver, i: number) =>
  saver.put(
    { configurable: { thread_id: `t${i}`, checkpoint_ns: "" } },
    checkpointOf(uuid6(i), { n: i }, { n: 1 }),
    { source: "loop", step: 0, parents: {} },
    { n: 1 },
  );

describe.each(DRIVERS)("close() with calls in flight on %s (%s)", (dialect, driver) => {
  it("settles every call, returns, and later calls fail without waiting", async () => {
    const url = await freshDatabaseUrl(dialect);
    const saver = await DrizzleSaver.fromUrl(url, { driver });
    await saver.setup();
    const store = await DrizzleStore.fromUrl(url, { driver });
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < CALLS; i++) {
      calls.push(
        putOn(saver, i),
        store.put(["notes"], `k${i}`, { i }),
        saver.getTuple({ configurable: { thread_id: `t${i}` } }),
      );
    }
    // Some calls are on a connection, the others wait for one.
    await new Promise((resolve) => setTimeout(resolve, 5));
    const closing = Promise.all([saver.close(), store.close()]);
    await within(Promise.allSettled(calls), 20_000, "the calls in flight");
    await within(closing, 20_000, "close()");
    const later = await within(
      Promise.allSettled([
        putOn(saver, CALLS),
        saver.getTuple({ configurable: { thread_id: "t1" } }),
        store.get(["notes"], "k1"),
      ]),
      20_000,
      "calls after close()",
    );
    expect(later.map((result) => result.status)).toEqual(["rejected", "rejected", "rejected"]);
    await within(Promise.all([saver.close(), store.close()]), 5_000, "a second close()");
  });
});
