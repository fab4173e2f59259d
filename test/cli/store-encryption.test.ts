/**
 * The command line on an encrypted store: `store get|search` open sealed items with the
 * keys from the environment (and refuse them without), `status` counts the store's items
 * per key id, and `rekey` re-seals them under the active key.
 */
import { describe, expect, it } from "vitest";
import { DrizzleStore, type EncryptionOptions } from "../../src/index.js";
import { KEY_1, KEY_2 } from "../encryption/keys.js";
import { DIALECTS, type DialectName, freshDatabaseUrl } from "../helpers/databases.js";
import { cli, jsonLines } from "./helpers.js";

const K1_ENV = { LANGGRAPH_CHECKPOINT_KEYS: `k1:${KEY_1.toString("base64")}` };
const BOTH_ENV = {
  LANGGRAPH_CHECKPOINT_KEYS: `k1:${KEY_1.toString("base64")},k2:${KEY_2}`,
  LANGGRAPH_CHECKPOINT_ACTIVE_KEY: "k2",
};
const ONLY_K2: EncryptionOptions = { keys: { k2: KEY_2 }, activeKeyId: "k2" };

describe.each(DIALECTS)(
  "the store commands on an encrypted store on %s",
  { timeout: 300_000 },
  (dialect: DialectName) => {
    it("get and search with keys from the environment; status and rekey cover the store's items", async () => {
      const url = await freshDatabaseUrl(dialect);
      const store = await DrizzleStore.fromUrl(url, { encryption: { keys: { k1: KEY_1 }, activeKeyId: "k1" } });
      await store.setup();
      await store.put(["users", "u1"], "tea", { drink: "tea", n: 3 });
      await store.put(["users", "u1"], "coffee", { drink: "coffee", n: 1 });
      await store.close();

      const refused = await cli(["store", "get", "users.u1", "tea", "--url", url]);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toMatch(/sealed and this store has no encryption option/);
      const get = await cli(["store", "get", "users.u1", "tea", "--url", url], { env: K1_ENV });
      expect(get.code, get.stderr).toBe(0);
      expect(JSON.parse(get.stdout)).toMatchObject({ key: "tea", value: { drink: "tea", n: 3 } });
      const search = await cli(["store", "search", "users", "--url", url, "--filter", 'n={"$gt":2}', "--json"], {
        env: K1_ENV,
      });
      expect(search.code, search.stderr).toBe(0);
      expect(jsonLines(search.stdout).map((item) => item.key)).toEqual(["tea"]);

      const before = await cli(["status", "--url", url], { env: K1_ENV });
      expect(before.code, before.stderr).toBe(0);
      expect(before.stdout).toContain("store items    k1: 2, plaintext: 0");
      // --no-store leaves the store's items under k1.
      const saverOnly = await cli(["rekey", "--url", url, "--no-store"], { env: BOTH_ENV });
      expect(saverOnly.code, saverOnly.stderr).toBe(0);
      expect(saverOnly.stdout).toContain("and 0 store items");
      expect(saverOnly.stdout).toContain("store   k1: 2, plaintext: 0");
      const rekey = await cli(["rekey", "--url", url], { env: BOTH_ENV });
      expect(rekey.code, rekey.stderr).toBe(0);
      expect(rekey.stdout).toContain('and 2 store items under key "k2"');
      expect(rekey.stdout).toContain("store   k2: 2, plaintext: 0");
      const json = await cli(["status", "--url", url, "--json"]);
      expect(JSON.parse(json.stdout).encryption.store).toEqual({ keys: { k2: 2 }, plaintext: 0 });

      const onlyNew = await DrizzleStore.fromUrl(url, { encryption: ONLY_K2 });
      try {
        expect((await onlyNew.search(["users"])).map((item) => item.value)).toEqual([
          { drink: "coffee", n: 1 },
          { drink: "tea", n: 3 },
        ]);
      } finally {
        await onlyNew.close();
      }
    });
  },
);
