/**
 * Semantic search through each native vector index (pgvector on PGlite and on a server that
 * has it, libSQL's index, sqlite-vec): the exact search's cases with the index always asked
 * first (exactBelow 0), the side table kept in step with puts, re-puts, deletes and the
 * sweeper, and the errors when an index is asked for where there is none.
 */
import { PGlite } from "@electric-sql/pglite";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DrizzleStore, VectorIndexError } from "../../src/index.js";
import { freshNativeStore, NATIVE_TARGETS, type OpenNativeStore, pgvectorMissing } from "../helpers/native-stores.js";
import { freshStore, manualClock } from "../helpers/stores.js";
import { DIMS, embed, vectorSearchCases } from "./vector-cases.js";

const serverMissing = await pgvectorMissing();
const skipped = (target: string) => target === "postgres-pgvector" && serverMissing !== undefined;
if (serverMissing) console.log(`postgres-pgvector skipped: ${serverMissing}`);

/** How many vectors the side table holds. */
async function vectorCount(open: OpenNativeStore): Promise<number> {
  const [row] = await open.raw("select count(*) as n from store_vectors");
  return Number(row.n);
}

describe.each(NATIVE_TARGETS)("native vector index on %s", (target) => {
  describe.skipIf(skipped(target))("the exact search's cases, through the index", () => {
    vectorSearchCases((options) => freshNativeStore(target, options), { native: { exactBelow: 0 } });
  });

  describe.skipIf(skipped(target))("the side table", () => {
    let open: OpenNativeStore;
    const clock = manualClock();
    beforeAll(async () => {
      open = await freshNativeStore(target, {
        clock: clock.now,
        index: { dims: DIMS, embed, fields: ["a", "b"], native: { exactBelow: 0 } },
      });
    }, 60_000);
    afterAll(async () => open?.close());

    it("follows puts, re-puts, deletes and the sweeper, in the batch's transaction", async () => {
      const { store } = open;
      await store.put(["s"], "two", { a: "alpha", b: "beta" });
      await store.put(["s"], "one", { a: "gamma" });
      await store.put(["s"], "none", { a: "delta" }, false);
      expect(await vectorCount(open)).toBe(3);
      await store.put(["s"], "two", { a: "alpha" }); // re-put: the stale vector goes
      expect(await vectorCount(open)).toBe(2);
      await store.put(["s"], "one", { a: "gamma" }, false); // nothing to embed now
      expect(await vectorCount(open)).toBe(1);
      await store.delete(["s"], "two");
      expect(await vectorCount(open)).toBe(0);
      // A failing batch (a wrong-size vector) writes neither items nor vectors.
      await expect(
        store.batch([
          { namespace: ["s"], key: "x", value: { a: "fine" } },
          { namespace: ["s"], key: "y", value: { a: "WRONG" } },
        ]),
      ).rejects.toThrow();
      expect(await vectorCount(open)).toBe(0);
      await store.put(["s"], "brief", { a: "epsilon" }, undefined, { ttl: 1 });
      await store.put(["s"], "long", { a: "zeta" }, undefined, { ttl: null });
      expect(await vectorCount(open)).toBe(2);
      clock.tick(2 * 60_000);
      expect(await store.sweepExpiredItems()).toBe(1);
      expect(await vectorCount(open)).toBe(1);
      const [hit] = await store.search(["s"], { query: "zeta" });
      expect(hit.key).toBe("long");
      expect(hit.score).toBeCloseTo(1, 6);
      // A store without the index deletes an item: its vector stays until a native sweep.
      const plain = await open.another({ index: { dims: DIMS, embed, fields: ["a", "b"] } });
      try {
        await plain.delete(["s"], "long");
      } finally {
        await plain.close();
      }
      expect(await vectorCount(open)).toBe(1);
      expect(await store.sweepExpiredItems()).toBe(0);
      expect(await vectorCount(open)).toBe(0);
    });

    it("setup() again (another store, another process) changes nothing", async () => {
      const again = await open.another({ index: { dims: DIMS, embed, native: true } });
      try {
        await again.setup();
      } finally {
        await again.close();
      }
      expect(await vectorCount(open)).toBe(0);
      await open.store.put(["s"], "back", { a: "eta" });
      expect(await vectorCount(open)).toBe(1);
    });
  });

  it.skipIf(skipped(target))("two stores setting the index up at once build it once", async () => {
    const exact = await freshNativeStore(target, { index: { dims: DIMS, embed, fields: ["a"] } });
    try {
      await exact.store.put(["c"], "one", { a: "alpha" });
      const options = { index: { dims: DIMS, embed, fields: ["a"], native: true } };
      const stores = await Promise.all([exact.another(options), exact.another(options)]);
      try {
        await Promise.all(stores.map((store) => store.setup()));
        expect(await vectorCount(exact)).toBe(1);
        await stores[0].put(["c"], "two", { a: "beta" });
        expect(await vectorCount(exact)).toBe(2);
      } finally {
        await Promise.all(stores.map((store) => store.close()));
      }
    } finally {
      await exact.close();
    }
  });

  it.skipIf(skipped(target))(
    "fills a new index from the items already embedded; refuses other dimensions",
    async () => {
      const exact = await freshNativeStore(target, { index: { dims: DIMS, embed, fields: ["a", "b"] } });
      try {
        await exact.store.put(["f"], "one", { a: "alpha", b: "beta" });
        await exact.store.put(["f"], "two", { a: "gamma" });
        const native = await exact.another({ index: { dims: DIMS, embed, fields: ["a"], native: { exactBelow: 0 } } });
        try {
          await native.setup();
          expect(await vectorCount(exact)).toBe(3);
          const [hit] = await native.search(["f"], { query: "gamma" });
          expect(hit.key).toBe("two");
        } finally {
          await native.close();
        }
        const other = await exact.another({ index: { dims: DIMS / 2, embed, native: true } });
        try {
          await expect(other.setup()).rejects.toThrow(VectorIndexError);
        } finally {
          await other.close();
        }
      } finally {
        await exact.close();
      }
    },
  );
});

describe("native index unavailable", () => {
  const index = (native: true | "if-available") => ({ dims: DIMS, embed, native });

  it("MySQL/MariaDB: required is an error at construction; if-available searches exactly", async () => {
    await expect(freshStore("mysql", { index: index(true) })).rejects.toThrow(VectorIndexError);
    const open = await freshStore("mysql", { index: { ...index("if-available"), fields: ["text"] } });
    try {
      await open.store.put(["m"], "k", { text: "hello" });
      const [hit] = await open.store.search(["m"], { query: "hello" });
      expect(hit.score).toBeCloseTo(1, 6);
    } finally {
      await open.close();
    }
  });

  it("PGlite without the vector extension: setup() fails when required, searches exactly if-available", async () => {
    const required = new DrizzleStore(drizzlePglite(await PGlite.create()), { index: index(true) });
    await expect(required.setup()).rejects.toThrow(VectorIndexError);
    // The index does not exist: a put writes nothing.
    await expect(required.put(["p"], "k", { text: "x" })).rejects.toThrow(VectorIndexError);
    expect(await required.search(["p"])).toEqual([]);
    const lenient = new DrizzleStore(drizzlePglite(await PGlite.create()), {
      index: { ...index("if-available"), fields: ["t"] },
    });
    await lenient.setup();
    await lenient.put(["p"], "k", { t: "hello" });
    const [hit] = await lenient.search(["p"], { query: "hello" });
    expect(hit.score).toBeCloseTo(1, 6);
  });

  it("refuses a bad native option", () => {
    const client = new PGlite();
    const db = drizzlePglite(client);
    expect(() => new DrizzleStore(db, { index: { dims: DIMS, embed, native: "yes" as never } })).toThrow(
      /index\.native/,
    );
    expect(() => new DrizzleStore(db, { index: { dims: DIMS, embed, native: { exactBelow: -1 } } })).toThrow(
      /exactBelow/,
    );
  });
});
