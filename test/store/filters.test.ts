/**
 * Search filters on each database: typed equality, ranges on numbers as numbers and on
 * strings by code points, a missing key for $ne/$nin/$exists, $in with an empty list,
 * several operators on one key, and filters applied before LIMIT (full pages).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvalidInputError } from "../../src/index.js";
import { DIALECTS, freshStore, manualClock, type OpenStore } from "../helpers/stores.js";

const ITEMS: Record<string, Record<string, unknown>> = {
  nine: { n: 9, s: "9", b: true },
  ten: { n: 10, s: "10", b: false },
  ten5: { n: 10.5, s: "a" },
  neg: { n: -3, s: "B", z: null },
  text: { n: "10", s: "b" },
  none: { other: 1 },
};

describe.each(DIALECTS)("store filters on %s", (dialect) => {
  let open: OpenStore;
  const clock = manualClock();
  const found = async (filter: Record<string, unknown>) =>
    (await open.store.search(["f"], { filter, limit: 100 })).map((item) => item.key).sort();

  beforeAll(async () => {
    open = await freshStore(dialect, { clock: clock.now });
    for (const [key, value] of Object.entries(ITEMS)) {
      clock.tick();
      await open.store.put(["f"], key, value);
    }
  });
  afterAll(async () => open?.close());

  it("compares bare values and $eq by type", async () => {
    expect(await found({ n: 10 })).toEqual(["ten"]);
    expect(await found({ n: "10" })).toEqual(["text"]);
    expect(await found({ s: "b" })).toEqual(["text"]);
    expect(await found({ b: true })).toEqual(["nine"]);
    expect(await found({ b: false })).toEqual(["ten"]);
    expect(await found({ z: null })).toEqual(["neg"]);
    expect(await found({ n: { $eq: 10.5 } })).toEqual(["ten5"]);
    expect(await found({ n: 10, s: "10" })).toEqual(["ten"]);
  });

  it("compares ranges of numbers as numbers and of strings by code points", async () => {
    expect(await found({ n: { $gt: 9 } })).toEqual(["ten", "ten5"]);
    expect(await found({ n: { $gte: 9, $lt: 10.5 } })).toEqual(["nine", "ten"]);
    expect(await found({ n: { $lte: 0 } })).toEqual(["neg"]);
    // "9" > "10" as text; strings compare with strings only.
    expect(await found({ s: { $gt: "10" } })).toEqual(["neg", "nine", "ten5", "text"]);
    expect(await found({ s: { $lt: "a" } })).toEqual(["neg", "nine", "ten"]);
  });

  it("lets a missing key satisfy $ne, $nin and $exists: false only", async () => {
    expect(await found({ n: { $ne: 10 } })).toEqual(["neg", "nine", "none", "ten5", "text"]);
    expect(await found({ n: { $nin: [9, 10] } })).toEqual(["neg", "none", "ten5", "text"]);
    expect(await found({ n: { $in: [9, "10"] } })).toEqual(["nine", "text"]);
    expect(await found({ n: { $in: [] } })).toEqual([]);
    expect(await found({ n: { $nin: [] } })).toEqual(Object.keys(ITEMS).sort());
    expect(await found({ b: { $exists: true } })).toEqual(["nine", "ten"]);
    expect(await found({ b: { $exists: false } })).toEqual(["neg", "none", "ten5", "text"]);
    expect(await found({ z: { $exists: true } })).toEqual(["neg"]);
    expect(await found({ missing: { $gt: 0 } })).toEqual([]);
  });

  it("refuses operators and operands it does not know", async () => {
    await expect(found({ n: { $gt: 1, $foo: 2 } })).rejects.toThrow(InvalidInputError);
    await expect(found({ n: { $in: 3 } })).rejects.toThrow(/expects an array/);
    await expect(found({ n: { $gt: true } })).rejects.toThrow(InvalidInputError);
    await expect(found({ n: { a: 1 } })).rejects.toThrow(InvalidInputError);
    await expect(found({ n: [1] })).rejects.toThrow(InvalidInputError);
    await expect(found({ n: { $exists: 1 } })).rejects.toThrow(InvalidInputError);
  });

  it("refuses, as puts do, a key or string with NUL or a lone surrogate (PostgreSQL failed on them)", async () => {
    for (const filter of [
      { s: "b\u0000" },
      { "s\u0000": 1 },
      { s: "\ud800" },
      { "\udc00": { $exists: false } },
      { s: { $gt: "a\u0000" } },
      { s: { $in: ["b", "\u0000"] } },
      { s: { $ne: "\ud800" } },
    ]) {
      await expect(found(filter)).rejects.toThrow(InvalidInputError);
    }
  });

  it("filters before LIMIT: pages are full though newer items do not match", async () => {
    const { store } = open;
    for (let i = 0; i < 30; i++) {
      clock.tick();
      await store.put(["page"], `match-${String(i).padStart(2, "0")}`, { kind: "match", i });
    }
    for (let i = 0; i < 40; i++) {
      clock.tick();
      await store.put(["page"], `other-${i}`, { kind: "other", i });
    }
    const pages: string[][] = [];
    for (let offset = 0; offset < 30; offset += 10) {
      pages.push((await store.search(["page"], { filter: { kind: "match" }, limit: 10, offset })).map((i) => i.key));
    }
    expect(pages.map((page) => page.length)).toEqual([10, 10, 10]);
    expect(pages.flat()).toEqual(Array.from({ length: 30 }, (_, i) => `match-${String(29 - i).padStart(2, "0")}`));
  });
});
