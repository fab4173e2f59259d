/**
 * Calls after `close()`: every public call of a saver or store is a SaverClosedError,
 * refused before it reaches the database, whatever the driver. A call used to fail with
 * the driver's own error, a different one per driver ("The database connection is not
 * open", CONNECTION_ENDED, "Can't add new command when connection is in closed state"...).
 * A saver or store given the application's database (which close() leaves open) refuses
 * them too. Calls in flight at close(): test/drivers/close.test.ts.
 */
import { uuid6 } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { DrizzleSaver, DrizzleStore, SaverClosedError, type UrlDriver } from "../../src/index.js";
import { type DialectName, freshDatabaseUrl } from "../helpers/databases.js";
import { EXTRA_DRIVERS, openFresh } from "../helpers/drivers.js";
import { checkpointOf } from "../reliability/helpers.js";

const URL_DRIVERS: [DialectName, UrlDriver][] = [
  ["postgres", "postgres"],
  ["postgres", "pg"],
  ["mysql", "mysql2"],
  ["sqlite", "better-sqlite3"],
  ["sqlite", "libsql"],
];

const root = (thread_id: string) => ({ configurable: { thread_id, checkpoint_ns: "" } });
const putOn = (saver: DrizzleSaver, thread: string, n: number) =>
  saver.put(root(thread), checkpointOf(uuid6(n), { n }, { n: 1 }), { source: "loop", step: n, parents: {} }, { n: 1 });

/** Every public call of the saver that reaches the database, by name. */
function saverCalls(saver: DrizzleSaver): [string, () => Promise<unknown>][] {
  const first = async (iterable: AsyncIterable<unknown>) => {
    for await (const item of iterable) return item;
  };
  return [
    ["setup", () => saver.setup()],
    ["migrationStatus", () => saver.migrationStatus()],
    ["storageStats", () => saver.storageStats()],
    ["getTuple", () => saver.getTuple(root("t"))],
    ["list", () => first(saver.list(root("t")))],
    ["put", () => putOn(saver, "after-close", 9)],
    [
      "putWrites",
      () =>
        saver.putWrites({ configurable: { ...root("t").configurable, checkpoint_id: uuid6(1) } }, [["n", 1]], "task"),
    ],
    ["deleteThread", () => saver.deleteThread("t")],
    ["getDeltaChannelHistory", () => saver.getDeltaChannelHistory({ config: root("t"), channels: ["n"] })],
    ["copyThread", () => saver.copyThread("t", "t-copy")],
    ["prune", () => saver.prune(["t"])],
    ["deleteForRuns", () => saver.deleteForRuns(["run"])],
    ["expireThreads", () => saver.expireThreads({ idleSince: new Date() })],
    ["sweep", () => saver.sweep({ idleFor: "1d", strategy: "delete" })],
    ["startSweeper", async () => saver.startSweeper({ intervalMs: 1000, idleFor: "1d", strategy: "delete" })],
    ["pinThread", () => saver.pinThread("t")],
    ["unpinThread", () => saver.unpinThread("t")],
    ["listThreads", () => first(saver.listThreads())],
    ["searchThreads", () => saver.searchThreads()],
    ["countThreads", () => saver.countThreads()],
    ["rekey", () => saver.rekey()],
    ["encryptionStatus", () => saver.encryptionStatus()],
  ];
}

function storeCalls(store: DrizzleStore): [string, () => Promise<unknown>][] {
  return [
    ["setup", () => store.setup()],
    ["put", () => store.put(["notes"], "after-close", { v: 1 })],
    ["get", () => store.get(["notes"], "k")],
    ["search", () => store.search(["notes"])],
    ["delete", () => store.delete(["notes"], "k")],
    ["listNamespaces", () => store.listNamespaces()],
    ["batch", () => store.batch([{ namespace: ["notes"], key: "k" }])],
    ["rekey", () => store.rekey()],
    ["encryptionStatus", () => store.encryptionStatus()],
    ["sweepExpiredItems", () => store.sweepExpiredItems()],
    ["start", async () => store.start()],
  ];
}

/** Each call's outcome: the name of its error's class and its message, or "fulfilled". */
async function outcomes(calls: [string, () => Promise<unknown>][]): Promise<Record<string, string>> {
  const seen: Record<string, string> = {};
  for (const [name, call] of calls) {
    try {
      await call();
      seen[name] = "fulfilled";
    } catch (error) {
      seen[name] = error instanceof SaverClosedError ? `SaverClosedError: ${error.message}` : String(error);
    }
  }
  return seen;
}

const refusedAll = (calls: [string, unknown][], what: string) =>
  Object.fromEntries(
    calls.map(([name]) => [name, `SaverClosedError: ${name}: the ${what} is closed (its close() was called)`]),
  );

describe.each(URL_DRIVERS)("after close() on %s (%s, opened by fromUrl)", (dialect, driver) => {
  it("every call of the saver and of the store is a SaverClosedError; close() again is fine", async () => {
    const url = await freshDatabaseUrl(dialect);
    const saver = await DrizzleSaver.fromUrl(url, { driver });
    await saver.setup();
    await putOn(saver, "t", 1);
    const store = await DrizzleStore.fromUrl(url, { driver });
    await store.put(["notes"], "k", { v: 1 });
    await Promise.all([saver.close(), store.close()]);

    const savers = saverCalls(saver);
    expect(await outcomes(savers)).toEqual(refusedAll(savers, "DrizzleSaver"));
    const stores = storeCalls(store);
    expect(await outcomes(stores)).toEqual(refusedAll(stores, "DrizzleStore"));
    // getNextVersion reaches no database: it still answers.
    expect(saver.getNextVersion(undefined)).toBeDefined();
    await Promise.all([saver.close(), store.close()]);
  });
});

describe.each(EXTRA_DRIVERS.filter((driver) => driver !== "d1"))(
  "after close() on a database the application passed in (%s)",
  (driver) => {
    it("every call is refused and nothing is written; the database stays open for others", async () => {
      const database = await openFresh(driver);
      try {
        const saver = new DrizzleSaver(database.db);
        await saver.setup();
        await putOn(saver, "t", 1);
        const store = new DrizzleStore(database.db);
        await saver.close();
        await store.close();

        const savers = saverCalls(saver);
        expect(await outcomes(savers)).toEqual(refusedAll(savers, "DrizzleSaver"));
        const stores = storeCalls(store);
        expect(await outcomes(stores)).toEqual(refusedAll(stores, "DrizzleStore"));

        // Nothing of the refused calls reached the database, which is still open.
        const other = new DrizzleSaver(database.db);
        const otherStore = new DrizzleStore(database.db);
        expect(await other.getTuple(root("after-close"))).toBeUndefined();
        expect((await other.getTuple(root("t")))?.checkpoint.channel_values).toEqual({ n: 1 });
        expect(await otherStore.get(["notes"], "after-close")).toBeNull();
      } finally {
        await database.close();
      }
    });
  },
);

describe("a listing iterated across close()", () => {
  it.each(["list", "listThreads"] as const)("%s: the pages after close() are a SaverClosedError", async (call) => {
    const url = await freshDatabaseUrl("sqlite");
    const saver = await DrizzleSaver.fromUrl(url);
    await saver.setup();
    // More than one page (100) of checkpoints, and of threads.
    for (let i = 0; i < 120; i++) await putOn(saver, `t${i}`, i + 1);
    const listing = call === "list" ? saver.list({}) : saver.listThreads();
    const first = await listing.next();
    expect(first.done).toBe(false);
    await saver.close();
    // The rest of the first page was read before close(); the next page is refused.
    let read = 1;
    const error = await (async () => {
      try {
        for (let next = await listing.next(); !next.done; next = await listing.next()) read++;
      } catch (caught) {
        return caught;
      }
    })();
    expect(read).toBe(100);
    expect(error).toBeInstanceOf(SaverClosedError);
  });
});
