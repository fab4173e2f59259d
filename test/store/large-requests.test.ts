/**
 * Requests of the size an application may send, on every target: `$in` and `$nin` lists
 * up to STORE_FILTER_LIMITS.values (typed as short ones are), a filter beyond the limits
 * refused before any SQL, values nested as deep as the database's JSON holds, a namespace
 * and key at the 2,600-byte bound, an item beyond MySQL's max_allowed_packet, and a search
 * that renews the ttl of thousands of items. Each failed before with a database's or
 * drizzle's own error: SQLite refused a list of 1,000 values and a renewal of over 1,000
 * items (an expression tree at most 1000 deep), drizzle overflowed its stack past about
 * 100,000 parameters, MariaDB dropped the connection.
 */
import { randomBytes } from "node:crypto";
import mysql from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InvalidInputError, STORE_FILTER_LIMITS } from "../../src/index.js";
import { freshStore, manualClock, type OpenStore, TARGETS } from "../helpers/stores.js";

const { values: MOST_VALUES, conditions: MOST_CONDITIONS } = STORE_FILTER_LIMITS;
const MINUTE = 60_000;

describe.each(TARGETS)("large store requests on %s", (target) => {
  let open: OpenStore;
  const clock = manualClock();
  const keys = async (filter: Record<string, unknown>) =>
    (await open.store.search(["big"], { filter, limit: 100 })).map((item) => item.key).sort();

  beforeAll(async () => {
    open = await freshStore(target, { clock: clock.now });
    await open.store.batch([
      { namespace: ["big"], key: "number", value: { v: 4_321 } },
      { namespace: ["big"], key: "text", value: { v: "4321" } },
      { namespace: ["big"], key: "flag", value: { v: true } },
      { namespace: ["big"], key: "nothing", value: { v: null } },
      { namespace: ["big"], key: "missing", value: { w: 1 } },
    ]);
  });
  afterAll(async () => open?.close());

  it("matches $in and $nin lists of up to the limit's values, by type", async () => {
    // Even numbers and odd numbers' text: "4321" is in the list, the number 4321 is not.
    const mixed = Array.from({ length: MOST_VALUES }, (_, i) => (i % 2 === 0 ? i : `${i}`));
    expect(await keys({ v: { $in: mixed } })).toEqual(["text"]);
    expect(await keys({ v: { $nin: mixed } })).toEqual(["flag", "missing", "nothing", "number"]);
    const numbers = Array.from({ length: MOST_VALUES }, (_, i) => i);
    expect(await keys({ v: { $in: numbers } })).toEqual(["number"]);
    expect(await keys({ v: { $nin: numbers } })).toEqual(["flag", "missing", "nothing", "text"]);
    const texts = Array.from({ length: MOST_VALUES - 2 }, (_, i) => `${i}`).concat([true, null] as never[]);
    expect(await keys({ v: { $in: texts } })).toEqual(["flag", "nothing", "text"]);
    expect(await keys({ v: { $nin: texts } })).toEqual(["missing", "number"]);
  });

  it("refuses a filter beyond its limits with an InvalidInputError", async () => {
    const tooMany = Array.from({ length: MOST_VALUES + 1 }, (_, i) => i);
    await expect(keys({ v: { $in: tooMany } })).rejects.toThrow(InvalidInputError);
    await expect(keys({ v: { $in: tooMany } })).rejects.toThrow(/more than 10000/);
    const split = { v: { $in: tooMany.slice(0, MOST_VALUES) }, w: { $nin: [1] } };
    await expect(keys(split)).rejects.toThrow(/compares with 10001 values/);
    const wide = Object.fromEntries(Array.from({ length: MOST_CONDITIONS + 1 }, (_, i) => [`k${i}`, { $ne: i }]));
    await expect(keys(wide)).rejects.toThrow(/101 conditions/);
    const widest = Object.fromEntries(Array.from({ length: MOST_CONDITIONS }, (_, i) => [`k${i}`, { $ne: i }]));
    expect(await keys(widest)).toEqual(["flag", "missing", "nothing", "number", "text"]);
  });

  it("stores values nested as deep as the database's JSON holds, and refuses one level more", async () => {
    const most = { sqlite: 1000, postgres: 1000, mysql: 31 }[open.dialect];
    const nested = (levels: number) => {
      let value: Record<string, unknown> = { leaf: 1 };
      for (let i = 1; i < levels; i++) value = { a: value };
      return value;
    };
    await open.store.put(["deep"], "deepest", nested(most));
    expect((await open.store.get(["deep"], "deepest"))?.value).toEqual(nested(most));
    await expect(open.store.put(["deep"], "deeper", nested(most + 1))).rejects.toThrow(
      new RegExp(`more than ${most} levels deep`),
    );
    await expect(open.store.put(["deep"], "deeper", nested(50_000))).rejects.toThrow(InvalidInputError);
    expect(await open.store.get(["deep"], "deeper")).toBeNull();
    // A filtered search over the namespace reads the deepest value without trouble.
    expect((await open.store.search(["deep"], { filter: { a: { $exists: true } } })).map((item) => item.key)).toEqual([
      "deepest",
    ]);
  });

  it("stores a namespace and key of 2,600 bytes together, and refuses one byte more", async () => {
    // Random text, which PostgreSQL cannot compress into its index entries.
    const random = (length: number) => randomBytes(length).toString("base64url").slice(0, length);
    const label = random(1_596);
    const key = random(1_000);
    await open.store.put(["long", label.slice(1)], key, { v: 1 });
    expect((await open.store.get(["long", label.slice(1)], key))?.value).toEqual({ v: 1 });
    await expect(open.store.put(["long", label], key, { v: 1 })).rejects.toThrow(/2601 bytes .* the limit is 2600/);
    expect(await open.store.get(["long", label], key)).toBeNull();
  });

  if (target === "mysql") {
    it("refuses an item larger than max_allowed_packet clearly, writes nothing, and keeps working", async () => {
      const { store } = open;
      const connection = await mysql.createConnection(process.env.MYSQL_URL as string);
      const [[{ packet }]] = (await connection.query("select @@global.max_allowed_packet as packet")) as unknown as [
        { packet: unknown }[],
      ];
      await connection.end();
      const limit = Number(packet);
      expect(limit).toBeLessThanOrEqual(256 * 1024 * 1024); // the value below is limit + 1 MiB
      await expect(store.put(["packet"], "too-big", { text: "x".repeat(limit + 1024 * 1024) })).rejects.toThrow(
        /max_allowed_packet/,
      );
      expect(await store.get(["packet"], "too-big")).toBeNull();
      await store.put(["packet"], "after", { ok: true });
      expect((await store.get(["packet"], "after"))?.value).toEqual({ ok: true });
    }, 120_000);
  }

  it("renews the ttl of every item a large search reads", async () => {
    const { store } = open;
    await store.batch(
      Array.from({ length: 3_000 }, (_, i) => ({ namespace: ["ttl"], key: `k${i}`, value: { i }, ttl: 5 })),
    );
    clock.tick(4 * MINUTE);
    expect(await store.search(["ttl"], { limit: 3_000 })).toHaveLength(3_000);
    // Past the first expiry, within the renewed one.
    clock.tick(4 * MINUTE);
    expect(await store.search(["ttl"], { limit: 3_000, refreshTtl: false })).toHaveLength(3_000);
  });
});
