/**
 * Time to live on each database: expired items are never returned by any call, a read
 * renews the ttl (keeping updatedAt) unless told not to, ttl null never expires,
 * sweepExpiredItems counts what it removed, and start() sweeps on a timer that does not
 * keep the process alive.
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DrizzleStore, InvalidInputError } from "../../src/index.js";
import { runPeriodically } from "../../src/savers/periodic.js";
import { freshDatabaseUrl } from "../helpers/databases.js";
import { openRaw, type RawDatabase } from "../helpers/raw.js";
import { DIALECTS, freshStore, manualClock, type OpenStore, TARGETS } from "../helpers/stores.js";
import { expectExitsOnItsOwn } from "../reliability/helpers.js";

const MINUTE = 60_000;

describe.each(DIALECTS)("store ttl on %s", (dialect) => {
  let open: OpenStore;
  let raw: RawDatabase;
  const clock = manualClock();
  const count = async () => Number((await raw.query("select count(*) as n from store_items"))[0].n);

  beforeAll(async () => {
    open = await freshStore(dialect, { clock: clock.now, ttl: { defaultTtl: 10, sweepIntervalMinutes: 1 } });
    raw = await openRaw(dialect, open.url as string);
  });
  afterAll(async () => {
    await raw?.close();
    await open?.close();
  });

  it("never returns an expired item, and renews the ttl of the items a read returns", async () => {
    const { store } = open;
    const start = clock.now();
    await store.put(["ttl", "refreshed"], "r", { v: 1 });
    await store.put(["ttl", "unrefreshed"], "u", { v: 2 });
    await store.put(["ttl", "forever"], "f", { v: 3 }, undefined, { ttl: null });
    await store.put(["ttl", "short"], "s", { v: 4 }, undefined, { ttl: 1 });

    clock.tick(6 * MINUTE);
    expect((await store.get(["ttl", "refreshed"], "r"))?.value).toEqual({ v: 1 });
    expect((await store.get(["ttl", "unrefreshed"], "u", { refreshTtl: false }))?.value).toEqual({ v: 2 });
    expect(await store.get(["ttl", "short"], "s")).toBeNull();

    clock.tick(5 * MINUTE); // 11 minutes: u expired at 10, r renewed at 6 lives until 16
    expect(await store.get(["ttl", "unrefreshed"], "u")).toBeNull();
    const refreshed = await store.get(["ttl", "refreshed"], "r", { refreshTtl: false });
    expect(refreshed?.updatedAt.getTime()).toBe(start); // a refresh keeps updatedAt
    expect((await store.search(["ttl"], { refreshTtl: false })).map((i) => i.key).sort()).toEqual(["f", "r"]);
    expect(await store.listNamespaces({ prefix: ["ttl"] })).toEqual([
      ["ttl", "forever"],
      ["ttl", "refreshed"],
    ]);
    expect(await store.search(["ttl", "unrefreshed"])).toEqual([]);

    clock.tick(6 * MINUTE); // 17 minutes
    expect(await store.get(["ttl", "refreshed"], "r")).toBeNull();
    expect((await store.get(["ttl", "forever"], "f"))?.value).toEqual({ v: 3 });

    expect(await count()).toBe(4);
    expect(await store.sweepExpiredItems()).toBe(3);
    expect(await store.sweepExpiredItems()).toBe(0);
    expect(await count()).toBe(1);
    clock.tick(365 * 24 * 60 * MINUTE);
    expect((await store.get(["ttl", "forever"], "f"))?.value).toEqual({ v: 3 });
  });

  it("renews by search the items of the page only", async () => {
    const { store } = open;
    for (const key of ["a", "b", "c"]) {
      clock.tick();
      await store.put(["page"], key, { key });
    }
    clock.tick(8 * MINUTE);
    // Newest first: c and b are on the first page and renewed, a is not.
    expect((await store.search(["page"], { limit: 2 })).map((i) => i.key)).toEqual(["c", "b"]);
    clock.tick(5 * MINUTE);
    expect((await store.search(["page"], { refreshTtl: false })).map((i) => i.key)).toEqual(["c", "b"]);
  });

  it("sweeps from start(), the first pass at once", async () => {
    const { store } = open;
    await store.put(["swept"], "k", { v: 1 }, undefined, { ttl: 1 });
    clock.tick(2 * MINUTE);
    const before = await count();
    store.start();
    await vi.waitFor(async () => expect(await count()).toBeLessThan(before), { timeout: 10_000, interval: 20 });
    await store.stop();
    expect(await store.get(["swept"], "k")).toBeNull();
  });

  it("refuses a bad ttl", async () => {
    const { store } = open;
    await expect(store.put(["bad"], "k", { v: 1 }, undefined, { ttl: -1 })).rejects.toThrow(InvalidInputError);
    expect(await store.get(["bad"], "k")).toBeNull();
  });
});

describe.each(DIALECTS)("store put over an expired item on %s", (dialect) => {
  it("makes a new item (createdAt of the put), swept or not", async () => {
    const clock = manualClock();
    const open = await freshStore(dialect, { clock: clock.now });
    try {
      const { store } = open;
      const start = clock.now();
      await store.put(["expired"], "k", { v: 1 }, undefined, { ttl: 1 });
      await store.put(["expired"], "live", { v: 1 }, undefined, { ttl: 10 });
      clock.tick(2 * MINUTE);
      expect(await store.get(["expired"], "k")).toBeNull();
      // Not swept: the expired row is still there, but what replaces it is a new item.
      await store.batch([
        { namespace: ["expired"], key: "k", value: { v: 2 } },
        { namespace: ["expired"], key: "live", value: { v: 2 } },
      ]);
      const replaced = await store.get(["expired"], "k");
      expect(replaced?.value).toEqual({ v: 2 });
      expect(replaced?.createdAt.getTime()).toBe(clock.now());
      expect(replaced?.updatedAt.getTime()).toBe(clock.now());
      // An item still alive keeps its createdAt.
      expect((await store.get(["expired"], "live"))?.createdAt.getTime()).toBe(start);
    } finally {
      await open.close();
    }
  });
});

describe.each(DIALECTS)("store ttl bounds on %s", (dialect) => {
  it("refuses a ttl whose expiry no database column holds, writing nothing", async () => {
    const open = await freshStore(dialect);
    try {
      const { store } = open;
      await expect(
        store.batch([
          { namespace: ["huge"], key: "ok", value: { v: 1 } },
          { namespace: ["huge"], key: "k", value: { v: 1 }, ttl: 1e15 } as never,
        ]),
      ).rejects.toThrow(InvalidInputError);
      expect(await store.search(["huge"])).toEqual([]);
      // Ten billion minutes (some 19,000 years) still fit.
      await store.put(["huge"], "long", { v: 2 }, undefined, { ttl: 1e10 });
      expect((await store.get(["huge"], "long"))?.value).toEqual({ v: 2 });
      await expect(DrizzleStore.fromUrl(open.url as string, { ttl: { defaultTtl: 1e15 } })).rejects.toThrow(
        InvalidInputError,
      );
    } finally {
      await open.close();
    }
  });
});

describe.each(TARGETS)("store ttl over many items on %s", (target) => {
  it("renews and sweeps more items than one statement names", async () => {
    const clock = manualClock();
    const open = await freshStore(target, { clock: clock.now, ttl: { defaultTtl: 10 } });
    try {
      const { store } = open;
      const keys = Array.from({ length: 1_203 }, (_, i) => `k${i}`);
      await store.batch(keys.map((key) => ({ namespace: ["many"], key, value: { key } })));
      await store.put(["many-forever"], "f", { v: 1 }, undefined, { ttl: null });
      clock.tick(6 * MINUTE);
      expect(await store.search(["many"], { limit: 2_000 })).toHaveLength(keys.length); // renewed until 16
      clock.tick(6 * MINUTE);
      expect(await store.search(["many"], { limit: 2_000, refreshTtl: false })).toHaveLength(keys.length);
      clock.tick(5 * MINUTE);
      expect(await store.sweepExpiredItems()).toBe(keys.length);
      expect(await store.sweepExpiredItems()).toBe(0);
      expect(await store.search(["many"], { limit: 2_000, refreshTtl: false })).toEqual([]);
      expect(await store.get(["many-forever"], "f")).not.toBeNull();
    } finally {
      await open.close();
    }
  }, 60_000);
});

describe("the store's sweeper timer", () => {
  it("waits a sweep interval longer than setTimeout holds (24.8 days)", async () => {
    const open = await freshStore("sqlite", { ttl: { sweepIntervalMinutes: 60 * 24 * 30 } });
    try {
      const { store } = open;
      const sweep = vi.spyOn(store, "sweepExpiredItems");
      store.start();
      await vi.waitFor(() => expect(sweep).toHaveBeenCalledTimes(1), { timeout: 10_000, interval: 10 });
      await new Promise((resolve) => setTimeout(resolve, 300));
      await store.stop();
      // setTimeout runs a longer delay after 1 ms: the store swept without pause.
      expect(sweep).toHaveBeenCalledTimes(1);
    } finally {
      await open.close();
    }
  });

  it("runs each pass a whole interval after the last, however long the interval", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      let passes = 0;
      const interval = 30 * 24 * 60 * MINUTE; // beyond setTimeout's 2^31 - 1 ms
      const task = runPeriodically(async () => {
        passes++;
      }, interval);
      await vi.advanceTimersByTimeAsync(0);
      expect(passes).toBe(1);
      await vi.advanceTimersByTimeAsync(interval - 1);
      expect(passes).toBe(1);
      await vi.advanceTimersByTimeAsync(1);
      expect(passes).toBe(2);
      await vi.advanceTimersByTimeAsync(2 * interval);
      expect(passes).toBe(4);
      await task.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it("never keeps the process alive", async () => {
    const url = await freshDatabaseUrl("sqlite");
    const setup = await DrizzleStore.fromUrl(url);
    await setup.setup();
    await setup.close();
    await expectExitsOnItsOwn(join("test/store/workers", "idle-sweeper.ts"), { url });
  }, 30_000);
});
