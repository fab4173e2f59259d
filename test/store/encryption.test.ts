/**
 * `DrizzleStore` with encryption at rest on every dialect: what a dump of its table shows,
 * reading back (get, search with filters and queries, listNamespaces), rows copied or
 * changed by SQL, plaintext rows, key rotation and missing keys.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DecryptionError,
  DrizzleStore,
  type DrizzleStoreOptions,
  type EncryptionOptions,
  InvalidInputError,
  MissingKeyError,
} from "../../src/index.js";
import { KEY_1, KEY_2 } from "../encryption/keys.js";
import { DIALECTS, type DialectName, freshDatabaseUrl } from "../helpers/databases.js";
import { dumpTable, openRaw, type RawDatabase } from "../helpers/raw.js";

const ONLY_K1: EncryptionOptions = { keys: { k1: KEY_1 }, activeKeyId: "k1" };
const BOTH: EncryptionOptions = { keys: { k1: KEY_1, k2: KEY_2 }, activeKeyId: "k2" };
const ONLY_K2: EncryptionOptions = { keys: { k2: KEY_2 }, activeKeyId: "k2" };

const DIMS = 4;
const count = (text: string, char: string) => text.toLowerCase().split(char).length - 1;
const embed = async (texts: string[]) => texts.map((text) => [count(text, "a"), count(text, "o"), count(text, "w"), 1]);

describe.each(DIALECTS)("store encryption at rest on %s", (dialect: DialectName) => {
  let url: string;
  let raw: RawDatabase;
  let store: DrizzleStore;
  const open = async (options: DrizzleStoreOptions) => {
    const opened = await DrizzleStore.fromUrl(url, options);
    stores.push(opened);
    return opened;
  };
  const stores: DrizzleStore[] = [];

  beforeAll(async () => {
    url = await freshDatabaseUrl(dialect);
    store = await DrizzleStore.fromUrl(url, { encryption: ONLY_K1, index: { dims: DIMS, embed, fields: ["text"] } });
    await store.setup();
    raw = await openRaw(dialect, url);
  });
  afterAll(async () => {
    for (const opened of stores) await opened.close();
    await store.close();
    await raw.close();
  });

  /** The value column's JSON text of an item, as the database stores it. */
  async function valueText(path: string, key: string): Promise<string> {
    const cast = dialect === "postgres" ? "cast(value as text)" : dialect === "mysql" ? "cast(value as char)" : "value";
    const [row] = await raw.query(`select ${cast} as v from store_items where ns_path = ? and item_key = ?`, [
      path,
      key,
    ]);
    return Buffer.isBuffer(row.v) ? row.v.toString("utf8") : String(row.v);
  }
  async function setValue(path: string, key: string, json: string): Promise<void> {
    const param = dialect === "postgres" ? "cast(cast(? as text) as jsonb)" : "?";
    await raw.query(`update store_items set value = ${param} where ns_path = ? and item_key = ?`, [json, path, key]);
  }
  /** Copies an item's row by SQL to another namespace path and key, as a database writer could. */
  async function copyRow(from: [string, string], to: [string, string]): Promise<void> {
    await raw.query(
      `insert into store_items (ns_path, item_key, value, embeddings, created_at, updated_at, expires_at, ttl_minutes)
       select ?, ?, value, embeddings, created_at, updated_at, expires_at, ttl_minutes from store_items where ns_path = ? and item_key = ?`,
      [...to, ...from],
    );
  }

  it("a dump of the table holds none of the values or their vectors; get, search and listNamespaces read them back", async () => {
    await store.put(["users", "u1"], "food", { text: "SECRET-TEA lover", since: 2021 });
    await store.put(["users", "u1"], "pet", { text: "SECRET-CAT owner", since: 2024 });
    await store.put(["users", "u2"], "food", { text: "SECRET-COFFEE", since: 2019 }, false);
    const dump = await dumpTable(raw, "store_items");
    expect(dump).toContain("food"); // keys and namespaces are in the clear: the dump did read the rows
    expect(dump).not.toContain("SECRET");
    expect(dump).not.toContain("since");
    expect(dump).toContain("enc1.k1:store-item/json+f32:");
    // The vectors are inside the sealed value, never in their own column.
    expect((await raw.query("select count(*) as n from store_items where embeddings is not null"))[0].n).toEqual(
      dialect === "postgres" ? "0" : 0,
    );
    expect((await store.get(["users", "u1"], "food"))?.value).toEqual({ text: "SECRET-TEA lover", since: 2021 });
    const found = await store.search(["users"], { filter: { since: { $lt: 2022 } } });
    expect(found.map((item) => [item.namespace, item.key])).toEqual([
      [["users", "u2"], "food"],
      [["users", "u1"], "food"],
    ]);
    const ranked = await store.search(["users"], { query: "SECRET-CAT owner", limit: 2 });
    expect(ranked.map((item) => item.key)).toEqual(["pet", "food"]);
    expect(ranked[0].score).toBeCloseTo(1, 5);
    expect(await store.listNamespaces({ prefix: ["users"] })).toEqual([
      ["users", "u1"],
      ["users", "u2"],
    ]);
  });

  it("filters on sealed values agree with the same filters in SQL, and pages stay exact", async () => {
    let now = Date.UTC(2026, 0, 1);
    const clock = () => now;
    const plain = await open({ clock });
    const sealedStore = await open({ clock, encryption: ONLY_K1 });
    const values = Array.from({ length: 30 }, (_, i) => ({
      n: i % 7,
      s: ["a", "B", "é", "😀", "10", "9"][i % 6],
      ...(i % 4 === 0 && { z: null }),
      ...(i % 5 === 0 && { b: i % 2 === 0 }),
    }));
    for (const [i, value] of values.entries()) {
      now += i % 3; // some items in the same millisecond: ties break by key
      await sealedStore.put(["f", "sealed"], `k${String(i).padStart(2, "0")}`, value);
      await plain.put(["f", "plain"], `k${String(i).padStart(2, "0")}`, value);
    }
    expect(await sealedStore.encryptionStatus()).toMatchObject({ plaintext: 30 }); // the plain store's
    expect(await valueText("f.sealed", "k00")).toMatch(/^"enc1\.k1:/);
    const filters: Record<string, unknown>[] = [
      {},
      { n: 3 },
      { n: { $gte: 2, $lt: 5 } },
      { s: { $gt: "B" } },
      { s: { $in: ["a", "😀"] }, n: { $ne: 1 } },
      { z: null },
      { z: { $exists: false } },
      { b: { $nin: [true] } },
      { missing: { $ne: 1 } },
      { s: "10" },
      { n: "3" },
    ];
    for (const filter of filters) {
      for (const [limit, offset] of [
        [100, 0],
        [4, 3],
      ]) {
        const sealed = await sealedStore.search(["f", "sealed"], { filter, limit, offset });
        const clear = await plain.search(["f", "plain"], { filter, limit, offset });
        expect(
          sealed.map((item) => [item.key, item.value]),
          JSON.stringify(filter),
        ).toEqual(clear.map((item) => [item.key, item.value]));
      }
    }
    await expect(store.search(["f"], { filter: { n: { $regex: "x" } } })).rejects.toThrow(/unknown operator/);
  });

  it("a value copied by SQL to another key or another namespace fails with our error naming them", async () => {
    await store.put(["docs", "a"], "one", { text: "COPY-ME" });
    await copyRow(["docs.a", "one"], ["docs.a", "two"]);
    await copyRow(["docs.a", "one"], ["docs.b", "one"]);
    expect((await store.get(["docs", "a"], "one"))?.value).toEqual({ text: "COPY-ME" });
    const toKey = await store.get(["docs", "a"], "two").catch((e: unknown) => e);
    expect(toKey).toBeInstanceOf(DecryptionError);
    expect(String(toKey)).toContain('the store item "two" in namespace ["docs","a"]');
    const toNamespace = await store.get(["docs", "b"], "one").catch((e: unknown) => e);
    expect(toNamespace).toBeInstanceOf(DecryptionError);
    expect(String(toNamespace)).toContain('the store item "one" in namespace ["docs","b"]');
    // A search reaching a moved row fails whole: no partial page.
    await expect(store.search(["docs"])).rejects.toThrow(DecryptionError);
    await raw.query("delete from store_items where ns_path = ? and item_key = ?", ["docs.a", "two"]);
    await raw.query("delete from store_items where ns_path = ?", ["docs.b"]);
  });

  it("a flipped byte fails to open", async () => {
    await store.put(["flip"], "x", { text: "FLIP" });
    const text = JSON.parse(await valueText("flip", "x")) as string;
    const at = text.length - 10;
    const flipped = text.slice(0, at) + (text[at] === "A" ? "B" : "A") + text.slice(at + 1);
    await setValue("flip", "x", JSON.stringify(flipped));
    await expect(store.get(["flip"], "x")).rejects.toThrow(
      /the store item "x" in namespace \["flip"\] fails its integrity check/,
    );
    await expect(store.search(["flip"])).rejects.toThrow(DecryptionError);
    await raw.query("delete from store_items where ns_path = ?", ["flip"]);
  });

  it("a plaintext row is refused, and read with allowPlaintext; a store without keys refuses sealed rows", async () => {
    const plain = await open({});
    await plain.put(["legacy"], "old", { text: "OLD", n: 1 });
    await expect(store.get(["legacy"], "old")).rejects.toThrow(/stored in the clear/);
    await expect(store.search(["legacy"], { filter: { n: 1 } })).rejects.toThrow(DecryptionError);
    const migrating = await open({ encryption: { ...ONLY_K1, allowPlaintext: true } });
    expect((await migrating.get(["legacy"], "old"))?.value).toEqual({ text: "OLD", n: 1 });
    expect((await migrating.search(["legacy"], { filter: { n: 1 } })).map((item) => item.key)).toEqual(["old"]);
    await expect(plain.get(["users", "u1"], "food")).rejects.toThrow(/sealed and this store has no encryption option/);
    // A filter SQL would test on a sealed value (which it cannot read) fails too, rather than leaving it out.
    await expect(plain.search(["users"], { filter: { n: 1 } })).rejects.toThrow(
      /sealed and this store has no encryption option/,
    );
    await expect(plain.search(["users"], { filter: { n: { $gt: 0 } }, limit: 1 })).rejects.toThrow(DecryptionError);
    await raw.query("delete from store_items where ns_path = ?", ["legacy"]);
  });

  it("rotation: a new active key seals new items, old ones still open; a missing key is named", async () => {
    await store.put(["rot"], "old", { text: "ROT-OLD" });
    const rotated = await open({ encryption: BOTH });
    await rotated.put(["rot"], "new", { text: "ROT-NEW" });
    expect(await valueText("rot", "new")).toMatch(/^"enc1\.k2:/);
    expect((await rotated.get(["rot"], "old"))?.value).toEqual({ text: "ROT-OLD" });
    await expect(store.get(["rot"], "new")).rejects.toThrow(/key "k2"/);
    const onlyNew = await open({ encryption: ONLY_K2 });
    expect((await onlyNew.get(["rot"], "new"))?.value).toEqual({ text: "ROT-NEW" });
    const error = await onlyNew.get(["rot"], "old").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MissingKeyError);
    expect((error as MissingKeyError).keyId).toBe("k1");
    expect(String(error)).toContain('the store item "old" in namespace ["rot"]');
    await raw.query("delete from store_items where ns_path = ?", ["rot"]);
  });

  it("store.rekey beside a writer: every item ends under the new key and reads with it alone", async () => {
    const rotated = await open({ encryption: BOTH });
    const writer = await open({ encryption: BOTH });
    for (let i = 0; i < 40; i++) await store.put(["rk", `n${i % 4}`], `k${i}`, { i, text: `RK ${i}` });
    await open({}).then((plain) => plain.put(["rk", "plain"], "p", { i: -1 }));
    const writes = (async () => {
      for (let i = 0; i < 20; i++)
        await writer.put(["rk", `n${(i * 2) % 4}`], `k${i * 2}`, { i: i * 2, text: "rewritten" });
    })();
    const seen: number[] = [];
    const [done] = await Promise.all([rotated.rekey({ batchSize: 3, onProgress: (n) => seen.push(n) }), writes]);
    expect(done).toBeGreaterThan(0);
    expect(seen.length).toBeGreaterThan(3);
    await rotated.rekey(); // what a racing writer left under the old key (none here: it writes with k2)
    const rkStatus = await rotated.encryptionStatus();
    expect(rkStatus.plaintext).toBe(0);
    expect(Object.keys(rkStatus.keys)).toEqual(["k2"]);
    const onlyNew = await open({ encryption: ONLY_K2 });
    const items = await onlyNew.search(["rk"], { limit: 100 });
    expect(items).toHaveLength(41);
    const byKey = Object.fromEntries(items.map((item) => [`${item.namespace.join(".")}/${item.key}`, item.value]));
    expect(byKey["rk.n0/k0"]).toEqual({ i: 0, text: "rewritten" });
    expect(byKey["rk.n1/k1"]).toEqual({ i: 1, text: "RK 1" });
    expect(byKey["rk.plain/p"]).toEqual({ i: -1 });
    await raw.query("delete from store_items");
    await store.put(["users", "u1"], "food", { text: "SECRET-TEA lover", since: 2021 });
  });

  it("store.rekey refuses a batchSize that is not a positive integer, re-sealing nothing", async () => {
    const rotated = await open({ encryption: BOTH });
    await store.put(["rk-size"], "k", { text: "under k1" });
    for (const batchSize of [0, -1, 1.5, Number.NaN, "10" as never]) {
      await expect(rotated.rekey({ batchSize })).rejects.toThrow(InvalidInputError);
    }
    expect((await rotated.encryptionStatus()).keys.k2 ?? 0).toBe(0);
    expect(await rotated.rekey({ batchSize: 1 })).toBeGreaterThan(0);
    expect((await rotated.encryptionStatus()).keys.k1 ?? 0).toBe(0);
    await raw.query("delete from store_items where ns_path = ?", ["rk-size"]);
  });

  it("checks the option as the saver does", async () => {
    expect(
      () => new DrizzleStore(store as never, { encryption: { keys: { k1: KEY_1 }, activeKeyId: "k9" } }),
    ).toThrow();
    await expect(
      DrizzleStore.fromUrl(url, { encryption: { keys: { "bad id": KEY_1 }, activeKeyId: "bad id" } }),
    ).rejects.toThrow(/key id "bad id"/);
    await expect(
      DrizzleStore.fromUrl(url, { encryption: { keys: { k1: Buffer.alloc(8) }, activeKeyId: "k1" } }),
    ).rejects.toThrow(/must be 32 bytes/);
    // A native vector index would keep the vectors in the clear: refused, with either setting.
    for (const native of [true, "if-available"] as const) {
      await expect(
        DrizzleStore.fromUrl(url, { encryption: ONLY_K1, index: { dims: DIMS, embed, fields: ["text"], native } }),
      ).rejects.toThrow(/index.native cannot be used with encryption/);
    }
  });
});
