import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { DecryptionError, DrizzleSaver, DrizzleStore, type EncryptionOptions } from "../../src/index.js";
import { BIN, cli, cliEnv, ensureBuilt } from "../cli/helpers.js";
import { DIALECTS, type DialectName, freshSaver } from "../helpers/databases.js";
import { openRaw } from "../helpers/raw.js";
import { KEY_1, KEY_2 } from "./keys.js";
import { grow } from "./threads.js";

/**
 * Rotation: `rekey` (the saver's method and the command) re-seals every value under the
 * active key and seals plaintext rows, the store's items too; after it a saver and a store
 * holding only the new key read everything, also when a first run was killed half-way.
 */
const ONLY_K1: EncryptionOptions = { keys: { k1: KEY_1 }, activeKeyId: "k1" };
const BOTH: EncryptionOptions = { keys: { k1: KEY_1, k2: KEY_2 }, activeKeyId: "k2" };
const ONLY_K2: EncryptionOptions = { keys: { k2: KEY_2 }, activeKeyId: "k2" };
const KEYS_ENV = {
  LANGGRAPH_CHECKPOINT_KEYS: `k1:${KEY_1.toString("base64")},k2:${KEY_2}`,
  LANGGRAPH_CHECKPOINT_ACTIVE_KEY: "k2",
};

/** Threads of a few checkpoints (incremental messages, a note, a pending write each). */
async function fill(saver: DrizzleSaver, prefix: string, threads: number, steps: number): Promise<void> {
  for (let t = 0; t < threads; t++) await grow(saver, `${prefix}-${t}`, `${prefix} ${t}`, steps);
}

/** A 2-dimension embedding that tells the notes apart: their last digit and whether plain. */
const vectors = async (texts: string[]) =>
  texts.map((text) => [Number(text.at(-1)) + 1, text.includes("plain") ? 5 : 0]);

/** Every checkpoint of every thread, values and writes, as plain data. */
type Row = [Record<string, unknown> | undefined, unknown, unknown];

async function everything(saver: DrizzleSaver): Promise<Row[]> {
  const all: Row[] = [];
  for await (const tuple of saver.list({})) {
    all.push([tuple.config.configurable, tuple.checkpoint.channel_values, tuple.pendingWrites]);
  }
  return all;
}

describe.each(DIALECTS)("rekey on %s", (dialect: DialectName) => {
  beforeAll(async () => {
    await ensureBuilt();
  }, 600_000);

  it("re-seals every value under the new key and seals plaintext rows; then only the new key reads them", async () => {
    const { saver: old, url } = await freshSaver(dialect, { encryption: ONLY_K1 });
    const plain = await DrizzleSaver.fromUrl(url);
    const rotated = await DrizzleSaver.fromUrl(url, { encryption: BOTH });
    const onlyNew = await DrizzleSaver.fromUrl(url, { encryption: ONLY_K2 });
    const stores = {
      old: await DrizzleStore.fromUrl(url, {
        encryption: ONLY_K1,
        index: { dims: 2, embed: vectors, fields: ["text"] },
      }),
      plain: await DrizzleStore.fromUrl(url, { index: { dims: 2, embed: vectors, fields: ["text"] } }),
      onlyNew: await DrizzleStore.fromUrl(url, {
        encryption: ONLY_K2,
        index: { dims: 2, embed: vectors, fields: ["text"] },
      }),
    };
    try {
      await fill(old, "sealed", 2, 3);
      await fill(plain, "plain", 1, 2);
      await fill(rotated, "new", 1, 2);
      for (let i = 0; i < 5; i++) await stores.old.put(["memories", `u${i}`], "note", { text: `sealed note ${i}`, i });
      for (let i = 0; i < 3; i++) await stores.plain.put(["memories", `p${i}`], "note", { text: `plain note ${i}`, i });
      const before = await rotated.encryptionStatus();
      // 2 x 3 x 2 values + 2 x 3 writes under k1; 1 x 2 x 2 + 2 in the clear and under k2.
      expect(before).toEqual({ keys: { k1: 18, k2: 6 }, plaintext: 6, store: { keys: { k1: 5 }, plaintext: 3 } });
      await expect(stores.onlyNew.search(["memories"])).rejects.toThrow(DecryptionError);
      const migrating = await DrizzleSaver.fromUrl(url, { encryption: { ...BOTH, allowPlaintext: true } });
      const want = await everything(migrating);
      await migrating.close();
      expect(want).toHaveLength(10);
      // Before: old-key and plaintext rows are refused.
      await expect(everything(onlyNew)).rejects.toThrow(DecryptionError);

      const seen: number[] = [];
      const done = await rotated.rekey({
        batchSize: 4,
        onProgress: (p) => seen.push(p.values + p.writes + p.storeItems),
      });
      expect(done).toEqual({ values: 16, writes: 8, storeItems: 8 });
      expect(seen.length).toBeGreaterThan(5);
      expect(await rotated.encryptionStatus()).toEqual({
        keys: { k2: 30 },
        plaintext: 0,
        store: { keys: { k2: 8 }, plaintext: 0 },
      });
      expect(await everything(onlyNew)).toEqual(want);
      const items = await stores.onlyNew.search(["memories"], { filter: { i: { $lt: 2 } }, limit: 20 });
      expect(items.map((item) => item.value).sort((a, b) => String(a.text).localeCompare(String(b.text)))).toEqual([
        { text: "plain note 0", i: 0 },
        { text: "plain note 1", i: 1 },
        { text: "sealed note 0", i: 0 },
        { text: "sealed note 1", i: 1 },
      ]);
      // The vectors were re-sealed with their values: a query still ranks by them.
      const [best] = await stores.onlyNew.search(["memories"], { query: "plain note 2", limit: 1 });
      expect(best.value.text).toBe("plain note 2");
      // Run again: nothing left to do.
      expect(await rotated.rekey()).toEqual({ values: 0, writes: 0, storeItems: 0 });
    } finally {
      for (const s of [old, plain, rotated, onlyNew, ...Object.values(stores)]) await s.close();
    }
  });

  it("refuses a batchSize that is not a positive integer, re-sealing nothing (0 read nothing and reported done)", async () => {
    const { saver: old, url } = await freshSaver(dialect, { encryption: ONLY_K1 });
    const rotated = await DrizzleSaver.fromUrl(url, { encryption: BOTH });
    try {
      await fill(old, "sealed", 1, 2);
      for (const batchSize of [0, -1, 1.5, Number.NaN]) {
        await expect(rotated.rekey({ batchSize })).rejects.toThrow(/^rekey: batchSize must be a positive integer/);
      }
      expect(await rotated.encryptionStatus()).toMatchObject({ keys: { k1: 6 }, plaintext: 0 });
    } finally {
      await old.close();
      await rotated.close();
    }
  });

  it("with store: false leaves the store's items as they are, for a store without encryption", async () => {
    const { saver, url } = await freshSaver(dialect, { encryption: ONLY_K2 });
    const store = await DrizzleStore.fromUrl(url);
    try {
      await fill(saver, "kept", 1, 2);
      await store.put(["memories", "plain"], "note", { text: "plain note" });
      expect(await saver.rekey({ store: false })).toEqual({ values: 0, writes: 0, storeItems: 0 });
      expect((await saver.encryptionStatus()).store).toEqual({ keys: {}, plaintext: 1 });
      expect((await store.get(["memories", "plain"], "note"))?.value).toEqual({ text: "plain note" });
      // Without it, rekey seals the item, which this store then refuses.
      expect((await saver.rekey()).storeItems).toBe(1);
      await expect(store.get(["memories", "plain"], "note")).rejects.toThrow(DecryptionError);
    } finally {
      await store.close();
      await saver.close();
    }
  });

  it("runs beside writers: their values and the re-sealed ones all read with only the new key", async () => {
    const { saver: old, url } = await freshSaver(dialect, { encryption: ONLY_K1 });
    const rotated = await DrizzleSaver.fromUrl(url, { encryption: BOTH });
    const writer = await DrizzleSaver.fromUrl(url, { encryption: BOTH });
    const onlyNew = await DrizzleSaver.fromUrl(url, { encryption: ONLY_K2 });
    try {
      await fill(old, "before", 4, 4);
      const want = await everything(rotated);
      // The writer adds threads while rekey walks the tables in small batches.
      await Promise.all([rotated.rekey({ batchSize: 2 }), fill(writer, "during", 3, 4)]);
      expect(await rotated.encryptionStatus()).toEqual({
        keys: { k2: 7 * 4 * 3 },
        plaintext: 0,
        store: { keys: {}, plaintext: 0 },
      });
      const all = await everything(onlyNew);
      expect(all).toHaveLength(7 * 4);
      // The threads there before read as they were.
      expect(all.filter(([config]) => String(config?.thread_id).startsWith("before"))).toEqual(want);
    } finally {
      for (const s of [old, rotated, writer, onlyNew]) await s.close();
    }
  });

  it("leaves an import's staged rows alone (sealed for the thread they will be): neither re-sealed nor counted", async () => {
    const { saver: old, url } = await freshSaver(dialect, { encryption: ONLY_K1 });
    const rotated = await DrizzleSaver.fromUrl(url, { encryption: BOTH });
    const raw = await openRaw(dialect, url);
    const move = async (from: string, to: string) => {
      for (const table of ["checkpoints", "checkpoint_blobs", "checkpoint_writes"]) {
        await raw.query(`update ${table} set thread_id = ? where thread_id = ?`, [to, from]);
      }
    };
    try {
      await fill(old, "live", 1, 3);
      await fill(old, "staged", 1, 3);
      const want = await old.getTuple({ configurable: { thread_id: "staged-0" } });
      // What an import in progress (or killed) holds: the thread's rows under its staging id, sealed for the thread.
      const staging = `__transfer_staging__:${createHash("sha256").update("staged-0").digest("hex")}`;
      await move("staged-0", staging);
      await rotated.rekey();
      expect(await rotated.encryptionStatus()).toEqual({
        keys: { k2: 3 * 3 },
        plaintext: 0,
        store: { keys: {}, plaintext: 0 },
      });
      // Untouched: once in place, they read as the import sealed them.
      await move(staging, "staged-0");
      expect(await old.getTuple({ configurable: { thread_id: "staged-0" } })).toEqual(want);
    } finally {
      await raw.close();
      for (const s of [old, rotated]) await s.close();
    }
  });

  it("the rekey command killed with SIGKILL and run again ends with every value under the new key, nothing lost", {
    timeout: 300_000,
  }, async () => {
    const { saver: old, url } = await freshSaver(dialect, { encryption: ONLY_K1 });
    await fill(old, "killed", 4, 5);
    const want = await everything(old);
    await old.close();
    const run = spawn(process.execPath, [BIN, "rekey", "--url", url, "--batch-size", "2"], {
      env: { ...cliEnv(), ...KEYS_ENV },
      stdio: ["ignore", "pipe", "pipe"],
    });
    // Killed after its first batches landed.
    await new Promise<void>((resolve, reject) => {
      let lines = 0;
      let stderr = "";
      run.stderr.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
        lines += chunk
          .toString()
          .split("\n")
          .filter((line) => line.startsWith("rekey:")).length;
        if (lines >= 3) {
          run.kill("SIGKILL");
          resolve();
        }
      });
      run.on("exit", () => reject(new Error(`rekey ended before it was killed: ${stderr}`)));
    });
    const rotated = await DrizzleSaver.fromUrl(url, { encryption: BOTH });
    try {
      const half = await rotated.encryptionStatus();
      expect(half.keys.k2).toBeGreaterThan(0);
      expect(half.keys.k1).toBeGreaterThan(0);
      const again = await cli(["rekey", "--url", url, "--json"], { env: KEYS_ENV });
      expect(again.code, again.stderr).toBe(0);
      const report = JSON.parse(again.stdout) as { keys: Record<string, number>; plaintext: number };
      expect(report.keys).toEqual({ k2: 60 });
      expect(report.plaintext).toBe(0);
      const status = await cli(["status", "--url", url], { env: KEYS_ENV });
      expect(status.stdout).toContain("sealed values  k2: 60, plaintext: 0");
      // show decodes sealed values with the keys from the environment, and refuses them without.
      const shown = await cli(["show", "--url", url, "--thread", "killed-0", "--json"], {
        env: { ...KEYS_ENV, LANGGRAPH_CHECKPOINT_KEYS: `k2:${KEY_2}` },
      });
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout).toContain("killed 0 note 4");
      const refused = await cli(["show", "--url", url, "--thread", "killed-0"]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/sealed/);
    } finally {
      await rotated.close();
    }
    const onlyNew = await DrizzleSaver.fromUrl(url, { encryption: ONLY_K2 });
    try {
      expect(await everything(onlyNew)).toEqual(want);
    } finally {
      await onlyNew.close();
    }
  });
});
