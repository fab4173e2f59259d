/**
 * The `store ls|get|search|sweep` commands through the built binary: namespaces, one
 * item, a filtered search and the sweep of expired items.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { DrizzleStore } from "../../src/index.js";
import { DIALECTS, type DialectName, freshDatabaseUrl } from "../helpers/databases.js";
import { cli, ensureBuilt, jsonLines } from "./helpers.js";

describe.each(DIALECTS)("the store commands on %s", { timeout: 300_000 }, (dialect: DialectName) => {
  let url: string;
  beforeAll(async () => {
    await ensureBuilt();
    url = await freshDatabaseUrl(dialect);
    // Items put an hour ago with a ttl of one minute are expired now.
    const past = await DrizzleStore.fromUrl(url, { clock: () => Date.now() - 3_600_000 });
    await past.setup();
    await past.put(["users", "u1", "memories"], "old", { n: 0 }, undefined, { ttl: 1 });
    await past.close();
    const store = await DrizzleStore.fromUrl(url);
    await store.put(["users", "u1", "memories"], "tea", { drink: "tea", n: 3 });
    await store.put(["users", "u1", "memories"], "coffee", { drink: "coffee", n: 1 });
    await store.put(["users", "u2", "prefs"], "lang", { lang: "fr" });
    await store.close();
  }, 15 * 60_000);

  it("lists namespaces, gets an item, searches with a filter, sweeps expired items", async () => {
    const ls = await cli(["store", "ls", "--url", url, "--prefix", "users"]);
    expect(ls.code, ls.stderr).toBe(0);
    expect(ls.stdout.trim().split("\n")).toEqual(["users.u1.memories", "users.u2.prefs"]);
    const depth = await cli(["store", "ls", "--url", url, "--max-depth", "2", "--json"]);
    expect(jsonLines(depth.stdout)).toEqual([
      ["users", "u1"],
      ["users", "u2"],
    ]);

    const get = await cli(["store", "get", "users.u1.memories", "tea", "--url", url]);
    expect(get.code, get.stderr).toBe(0);
    expect(JSON.parse(get.stdout)).toMatchObject({
      namespace: ["users", "u1", "memories"],
      key: "tea",
      value: { drink: "tea", n: 3 },
    });
    const missing = await cli(["store", "get", "users.u1.memories", "old", "--url", url]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/no item "old"/);

    const search = await cli(["store", "search", "users", "--url", url, "--filter", 'n={"$gt":2}', "--json"]);
    expect(search.code, search.stderr).toBe(0);
    expect(jsonLines(search.stdout).map((item) => item.key)).toEqual(["tea"]);
    const bad = await cli(["store", "search", "--url", url, "--filter", 'n={"$regex":"x"}']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/unknown operator \$regex/);

    const sweep = await cli(["store", "sweep", "--url", url, "--json"]);
    expect(sweep.code, sweep.stderr).toBe(0);
    expect(jsonLines(sweep.stdout)).toEqual([{ removed: 1 }]);
    const again = await cli(["store", "sweep", "--url", url]);
    expect(again.stdout.trim()).toBe("removed 0 expired items");
  });
});
