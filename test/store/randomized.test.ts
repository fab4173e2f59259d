/**
 * Several hundred seeded random operations (put, delete, get, filtered search,
 * listNamespaces, batches mixing them) over namespaces with hostile labels, checked
 * against the reference model (model.ts) on every dialect and driver; and on each
 * target again with encryption on, where filters run in the process instead of in SQL.
 */
import { describe, expect, it } from "vitest";
import type { DrizzleStore } from "../../src/index.js";
import { TEST_ENCRYPTION } from "../encryption/keys.js";
import { freshStore, manualClock, TARGETS } from "../helpers/stores.js";
import { StoreModel } from "./model.js";

/** mulberry32: a small seeded generator, so a failure replays exactly. */
function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(list: readonly T[]): T => list[int(list.length)];
  return { next, int, pick };
}

// Labels that a LIKE, a case-insensitive collation or a prefix without a label boundary gets wrong.
const LABELS = [
  "acme",
  "acme-corp",
  "acme/",
  "Alice",
  "alice",
  "a_b",
  "a%b",
  "a\\b",
  "it's",
  "日本",
  "😀",
  "x y",
  "acme\u0001",
  "*",
];
const KEYS = ["k", "K", "k ", "k_%", "ключ", "😀", "", "a'b"];
const STRINGS = ["a", "b", "B", "10", "9", "", "é", "😀"];

const SEED = 20261125;
const OPERATIONS = 320;

type Rng = ReturnType<typeof random>;

function namespaceOf(rng: Rng): string[] {
  const depth = 1 + rng.int(3);
  return Array.from({ length: depth }, () => rng.pick(LABELS));
}

function randomValue(rng: Rng): Record<string, unknown> {
  const value: Record<string, unknown> = {};
  if (rng.next() < 0.8) value.n = rng.next() < 0.7 ? rng.int(21) - 10 : Math.round(rng.next() * 1000) / 100;
  if (rng.next() < 0.7) value.s = rng.pick(STRINGS);
  if (rng.next() < 0.5) value.b = rng.next() < 0.5;
  if (rng.next() < 0.3) value.z = null;
  if (rng.next() < 0.3) value.m = rng.next() < 0.5 ? String(rng.int(20)) : rng.int(20);
  value.nested = { list: [rng.int(5), "x"], text: rng.pick(LABELS) };
  return value;
}

function operand(rng: Rng, key: string): unknown {
  if (key === "s") return rng.pick(STRINGS);
  if (key === "b") return rng.next() < 0.5;
  if (key === "z") return null;
  return rng.next() < 0.8 ? rng.int(21) - 10 : rng.pick(STRINGS);
}

function filterOf(rng: Rng): Record<string, unknown> {
  const filter: Record<string, unknown> = {};
  const keys = ["n", "s", "b", "z", "m", "absent"];
  for (let i = rng.int(3); i > 0; i--) {
    const key = rng.pick(keys);
    const kind = rng.int(10);
    if (kind === 0) filter[key] = operand(rng, key);
    else if (kind <= 4) {
      const ops: Record<string, unknown> = {};
      for (let j = 1 + rng.int(2); j > 0; j--)
        ops[rng.pick(["$gt", "$gte", "$lt", "$lte"])] = key === "s" ? rng.pick(STRINGS) : rng.int(21) - 10;
      filter[key] = ops;
    } else if (kind <= 6) filter[key] = { [rng.pick(["$eq", "$ne"])]: operand(rng, key) };
    else if (kind <= 8)
      filter[key] = { [rng.pick(["$in", "$nin"])]: Array.from({ length: rng.int(3) }, () => operand(rng, key)) };
    else filter[key] = { $exists: rng.next() < 0.5 };
  }
  return filter;
}

interface Shaped {
  namespace: string[];
  key: string;
  value: unknown;
  createdAt: unknown;
  updatedAt: unknown;
}

const shape = (found: unknown) => {
  const item = found as Shaped | null;
  return (
    item && {
      namespace: item.namespace,
      key: item.key,
      value: item.value,
      createdAt: new Date(item.createdAt as number | Date).getTime(),
      updatedAt: new Date(item.updatedAt as number | Date).getTime(),
    }
  );
};

async function run(store: DrizzleStore, clock: ReturnType<typeof manualClock>, rng: Rng, model: StoreModel) {
  for (let step = 0; step < OPERATIONS; step++) {
    const now = clock.tick(rng.int(3)); // sometimes the same millisecond: ties break by namespace and key
    const context = `step ${step}`;
    const kind = rng.int(20);
    if (kind < 8) {
      const [namespace, key, value] = [namespaceOf(rng), rng.pick(KEYS), randomValue(rng)];
      await store.put(namespace, key, value);
      model.put(namespace, key, value, now);
    } else if (kind < 10) {
      const [namespace, key] = [namespaceOf(rng), rng.pick(KEYS)];
      await store.delete(namespace, key);
      model.put(namespace, key, null, now);
    } else if (kind < 12) {
      const [namespace, key] = [namespaceOf(rng), rng.pick(KEYS)];
      expect(shape(await store.get(namespace, key)), context).toEqual(shape(model.get(namespace, key)));
    } else if (kind < 16) {
      const prefix = rng.next() < 0.2 ? [] : namespaceOf(rng).slice(0, 1 + rng.int(2));
      const filter = filterOf(rng);
      const [limit, offset] = [1 + rng.int(8), rng.int(6)];
      const found = await store.search(prefix, { filter, limit, offset });
      expect(found.map(shape), `${context} ${JSON.stringify({ prefix, filter, limit, offset })}`).toEqual(
        model.search(prefix, filter, limit, offset).map(shape),
      );
    } else if (kind < 18) {
      const options = {
        ...(rng.next() < 0.6 && {
          prefix: namespaceOf(rng)
            .slice(0, 1 + rng.int(2))
            .map((l) => (rng.next() < 0.2 ? "*" : l)),
        }),
        ...(rng.next() < 0.3 && { suffix: [rng.pick(LABELS)] }),
        ...(rng.next() < 0.4 && { maxDepth: 1 + rng.int(2) }),
        limit: 1 + rng.int(10),
        offset: rng.int(4),
      };
      expect(await store.listNamespaces(options), `${context} ${JSON.stringify(options)}`).toEqual(
        model.listNamespaces(options),
      );
    } else {
      // A batch: its reads see the state before it, two puts to one key leave the last.
      const [namespace, key] = [namespaceOf(rng), rng.pick(KEYS)];
      const [first, second] = [randomValue(rng), rng.next() < 0.3 ? null : randomValue(rng)];
      const before = shape(model.get(namespace, key));
      const results = await store.batch([
        { namespace, key, value: first },
        { namespace, key },
        { namespace, key, value: second },
        { namespacePrefix: namespace.slice(0, 1), filter: {}, limit: 50, offset: 0 },
      ]);
      expect(shape(results[1]), context).toEqual(before);
      expect((results[3] as unknown[]).map(shape), context).toEqual(
        model.search(namespace.slice(0, 1), {}, 50, 0).map(shape),
      );
      model.put(namespace, key, second, now);
    }
  }
  // Everything at the end, page by page.
  const all = [] as unknown[];
  for (let offset = 0; ; offset += 7) {
    const page = await store.search([], { limit: 7, offset });
    all.push(...page.map(shape));
    if (page.length < 7) break;
  }
  expect(all).toEqual(model.search([], {}, 10_000, 0).map(shape));
}

describe.each(TARGETS)("randomized store operations against a model on %s", (target) => {
  it(`agrees with the model over ${OPERATIONS} seeded operations`, { timeout: 300_000 }, async () => {
    const clock = manualClock();
    const open = await freshStore(target, { clock: clock.now });
    try {
      await run(open.store, clock, random(SEED), new StoreModel());
    } finally {
      await open.close();
    }
  });
});

describe.each(TARGETS)("randomized store operations against a model, encrypted, on %s", (target) => {
  it(`agrees with the model over ${OPERATIONS} seeded operations`, { timeout: 300_000 }, async () => {
    const clock = manualClock();
    const open = await freshStore(target, { clock: clock.now, encryption: TEST_ENCRYPTION });
    try {
      await run(open.store, clock, random(SEED + 1), new StoreModel());
      // The filters ran on sealed values: nothing was stored in the clear.
      const status = await open.store.encryptionStatus();
      expect(status.plaintext).toBe(0);
      expect(status.keys.k1).toBeGreaterThan(0);
    } finally {
      await open.close();
    }
  });
});
