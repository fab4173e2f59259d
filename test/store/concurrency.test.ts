/**
 * Concurrent batches on the same items never surface a deadlock: eight writers put and
 * delete the same twenty keys, each batch in its own shuffled order. Every batch takes its
 * rows' locks in one order shared by all batches, so none waits for another in a cycle
 * (before, PostgreSQL chose deadlock victims until the retries ran out: WriteConflictError).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
});
