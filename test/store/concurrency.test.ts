/**
 * Concurrent store calls on the same items never surface a deadlock: eight writers put and
 * delete the same twenty keys, each batch in its own shuffled order; then writers, readers
 * renewing the ttl of what they read, batches that read and write, and the sweeper, all at
 * once on items that keep expiring. Every statement takes its rows' locks in one order
 * shared by all (before, PostgreSQL chose deadlock victims until the retries ran out, a
 * search or a sweep failed with "deadlock detected", and MariaDB's sweeps failed).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openRaw } from "../helpers/raw.js";
import { freshStore, type OpenStore, TARGETS } from "../helpers/stores.js";

const KEYS = Array.from({ length: 20 }, (_, i) => `k${String(i).padStart(2, "0")}`);
const WRITERS = 8;
const ROUNDS = 25;

/** A seeded shuffle, so a failure can be replayed. */
function shuffled<T>(items: T[], seed: number): T[] {
  const out = [...items];
  let state = seed;
  for (let i = out.length - 1; i > 0; i--) {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    const j = state % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** Items live 60 ms, so they expire, are swept and are renewed while the calls run. */
const SHORT_TTL_MINUTES = 0.001;

describe.each(TARGETS)("concurrent store batches on %s", (target) => {
  let open: OpenStore;
  beforeAll(async () => {
    open = await freshStore(target);
  });
  afterAll(async () => open?.close());

  it("put and delete the same keys in different orders without a deadlock reaching the caller", async () => {
    const { store } = open;
    const failures: unknown[] = [];
    const writer = async (w: number) => {
      for (let round = 0; round < ROUNDS; round++) {
        const order = shuffled(KEYS, w * 1_000 + round);
        // Every fifth round deletes a quarter of the keys in the same batch as it puts the rest.
        const ops = order.map((key, i) =>
          round % 5 === 4 && i % 4 === 0
            ? { namespace: ["shared"], key, value: null }
            : { namespace: ["shared"], key, value: { writer: w, round } },
        );
        await store.batch(ops).catch((error: unknown) => failures.push(error));
      }
    };
    await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
    expect(failures).toEqual([]);
    // One last batch from one writer decides every key.
    await store.batch(KEYS.map((key) => ({ namespace: ["shared"], key, value: { final: true } })));
    const items = await store.search(["shared"], { limit: 100 });
    expect(items.map((item) => item.key).sort()).toEqual(KEYS);
    expect(items.every((item) => item.value.final === true)).toBe(true);
  }, 120_000);

  it("writers, ttl-renewing readers, mixed batches and the sweeper at once: no deadlock, no failure", async () => {
    const busy = await freshStore(target, { ttl: { defaultTtl: SHORT_TTL_MINUTES, refreshOnRead: true } });
    const failures: unknown[] = [];
    let writersDone = false;
    const repeat = async (call: (round: number) => Promise<unknown>, rounds = Number.POSITIVE_INFINITY) => {
      for (let round = 0; round < rounds && !(rounds === Number.POSITIVE_INFINITY && writersDone); round++) {
        await call(round).catch((error: unknown) => failures.push(error));
        // Lets the other callers in on a synchronous driver.
        await new Promise((resolve) => setImmediate(resolve));
      }
    };
    try {
      const { store } = busy;
      const put = (key: string) => ({ namespace: ["shared"], key, value: { at: Date.now() } });
      const writers = Array.from({ length: 3 }, (_, w) =>
        repeat((round) => store.batch(shuffled(KEYS, w * 1_000 + round).map(put)), 40),
      );
      const others = [
        ...Array.from({ length: 2 }, () => repeat(() => store.search(["shared"], { limit: 20 }))),
        repeat((round) => store.get(["shared"], KEYS[round % KEYS.length])),
        repeat((round) =>
          store.batch([
            { namespacePrefix: ["shared"], limit: 20, offset: 0 },
            ...shuffled(KEYS, 7_000 + round)
              .slice(0, 5)
              .map(put),
          ]),
        ),
        repeat(() => store.sweepExpiredItems()),
      ];
      await Promise.all(writers);
      writersDone = true;
      await Promise.all(others);
      expect(failures).toEqual([]);
    } finally {
      await busy.close();
    }
    // None retried either: PostgreSQL counts the deadlocks it broke (flushed as the connections closed).
    if (target === "postgres" && busy.url) {
      const raw = await openRaw("postgres", busy.url);
      try {
        const [row] = await raw.query("select deadlocks from pg_stat_database where datname = current_database()");
        expect(Number(row.deadlocks)).toBe(0);
      } finally {
        await raw.close();
      }
    }
  }, 120_000);
});
