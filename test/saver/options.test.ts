// The options of `new DrizzleSaver`, `new DrizzleStore` and their `fromUrl`: an unknown key
// (at the top or inside encryption, retention, spider, ttl, index) or a value of the wrong
// type is an InvalidInputError naming it, before anything is opened or written. A misspelt
// `encryption` was dropped without a word and whole conversations were stored in the clear.
import { existsSync } from "node:fs";
import Database from "better-sqlite3";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { describe, expect, it } from "vitest";
import { DrizzleSaver, DrizzleStore, InvalidInputError } from "../../src/index.js";
import { freshDatabaseUrl } from "../helpers/databases.js";

const encryption = { keys: { k1: Buffer.alloc(32, 7) }, activeKeyId: "k1" };
const embed = async (texts: string[]) => texts.map(() => [1, 0]);
const index = { dims: 2, embed };
const retention = { idleFor: "30d", strategy: "delete" } as const;

/** A temporary SQLite file's path, not created yet. */
const sqliteFile = () => freshDatabaseUrl("sqlite");

/** The error `make` throws or rejects with (undefined if none). */
async function failure(make: () => unknown): Promise<unknown> {
  try {
    const made = (await make()) as { close?: () => Promise<void> } | undefined;
    await made?.close?.();
  } catch (error) {
    return error;
  }
  return undefined;
}

async function expectRefused(make: () => unknown, message: string | RegExp): Promise<void> {
  const error = await failure(make);
  expect(error).toBeInstanceOf(InvalidInputError);
  if (typeof message === "string") expect((error as Error).message).toBe(message);
  else expect((error as Error).message).toMatch(message);
}

type Case = [string, unknown, string | RegExp];

const SAVER_CASES: Case[] = [
  ["a misspelt encryption", { encyption: encryption }, 'DrizzleSaver: unknown option "encyption"'],
  ["a misspelt retention", { retenton: retention }, 'DrizzleSaver: unknown option "retenton"'],
  ["a misspelt incrementalValues", { incrementalvalues: 0 }, 'DrizzleSaver: unknown option "incrementalvalues"'],
  ["a misspelt excludeMetadataKeys", { excludeMetadatakeys: ["x"] }, /unknown option "excludeMetadatakeys"/],
  ["driver, which only fromUrl knows", { driver: "better-sqlite3" }, 'DrizzleSaver: unknown option "driver"'],
  ["a string", "encrypted", "DrizzleSaver: options must be an object"],
  ["an array", [encryption], "DrizzleSaver: options must be an object"],
  ["null", null, "DrizzleSaver: options must be an object"],
  [
    "an unknown key of encryption",
    { encryption: { ...encryption, allowPlainText: true } },
    'encryption: unknown option "allowPlainText"',
  ],
  [
    "a misspelt activeKeyId",
    { encryption: { keys: encryption.keys, activekeyId: "k1" } },
    'encryption: unknown option "activekeyId"',
  ],
  [
    "a non-boolean allowPlaintext",
    { encryption: { ...encryption, allowPlaintext: "yes" } },
    /encryption: allowPlaintext must be true or false/,
  ],
  ["an unknown key of retention", { retention: { ...retention, keeplast: 2 } }, /retention: unknown option "keeplast"/],
  ["an array as retention", { retention: [retention] }, /retention must be an object/],
  ["an unknown key of spider", { spider: { shards: [], shard: "mysql://x" } }, 'spider: unknown option "shard"'],
  ["a string as serde", { serde: "json" }, /serde must be a serializer/],
  ["null as tables", { tables: null }, /tables must be/],
  ["a number as schema", { schema: 5 }, /schema must be a non-empty string/],
];

const STORE_CASES: Case[] = [
  ["a misspelt encryption", { encyption: encryption }, 'DrizzleStore: unknown option "encyption"'],
  ["a misspelt ttl", { tll: { defaultTtl: 5 } }, 'DrizzleStore: unknown option "tll"'],
  ["a saver's option", { incrementalValues: 0 }, 'DrizzleStore: unknown option "incrementalValues"'],
  ["a string", "encrypted", "DrizzleStore: options must be an object"],
  ["null", null, "DrizzleStore: options must be an object"],
  ["an unknown key of ttl", { ttl: { defaultTTL: 5 } }, 'ttl: unknown option "defaultTTL"'],
  ["a number as ttl", { ttl: 60 }, /ttl must be an object/],
  ["an unknown key of index", { index: { ...index, feilds: ["text"] } }, 'index: unknown option "feilds"'],
  ["null as index", { index: null }, /index must be an object/],
  [
    "an unknown key of index.native",
    { index: { ...index, native: { ifavailable: true } } },
    'index.native: unknown option "ifavailable"',
  ],
  [
    "an unknown key of encryption",
    { encryption: { ...encryption, cachebytes: 0 } },
    'encryption: unknown option "cachebytes"',
  ],
  [
    "a non-boolean allowPlaintext",
    { encryption: { ...encryption, allowPlaintext: 1 } },
    /encryption: allowPlaintext must be true or false/,
  ],
  ["a string as tables", { tables: "items" }, /tables must be/],
];

describe("DrizzleSaver refuses options it does not know, or of the wrong type", () => {
  it.each(SAVER_CASES)("new DrizzleSaver: %s", async (_, options, message) => {
    const sqlite = new Database(await sqliteFile());
    try {
      await expectRefused(() => new DrizzleSaver(drizzle(sqlite), options as never), message);
    } finally {
      sqlite.close();
    }
  });

  it.each(SAVER_CASES.filter(([what]) => !what.startsWith("driver")))(
    "DrizzleSaver.fromUrl: %s, creating no file",
    async (_, options, message) => {
      const file = await sqliteFile();
      const named = typeof message === "string" ? message.replace(/^DrizzleSaver:/, "DrizzleSaver.fromUrl:") : message;
      await expectRefused(() => DrizzleSaver.fromUrl(file, options as never), named);
      expect(existsSync(file)).toBe(false);
    },
  );

  it("fromUrl knows driver; the options it accepts still open a saver that works", async () => {
    const saver = await DrizzleSaver.fromUrl(await sqliteFile(), {
      driver: "better-sqlite3",
      encryption: { ...encryption, allowPlaintext: false, cacheBytes: 0 },
      retention: { ...retention },
      incrementalValues: 10,
      excludeMetadataKeys: ["secret"],
      backgroundCheckpoints: false,
    });
    try {
      await saver.setup();
      const config = { configurable: { thread_id: "t", checkpoint_ns: "" } };
      const checkpoint = {
        v: 4,
        id: "1",
        ts: "",
        channel_values: { a: 1 },
        channel_versions: { a: "1" },
        versions_seen: {},
      };
      await saver.put(config, checkpoint, { source: "input", step: -1, parents: {} }, { a: "1" });
      expect((await saver.encryptionStatus()).keys).toEqual({ k1: 1 });
    } finally {
      await saver.close();
    }
  });
});

describe("DrizzleStore refuses options it does not know, or of the wrong type", () => {
  it.each(STORE_CASES)("new DrizzleStore: %s", async (_, options, message) => {
    const sqlite = new Database(await sqliteFile());
    try {
      await expectRefused(() => new DrizzleStore(drizzle(sqlite), options as never), message);
    } finally {
      sqlite.close();
    }
  });

  it.each(STORE_CASES)("DrizzleStore.fromUrl: %s, creating no file", async (_, options, message) => {
    const file = await sqliteFile();
    const named = typeof message === "string" ? message.replace(/^DrizzleStore:/, "DrizzleStore.fromUrl:") : message;
    await expectRefused(() => DrizzleStore.fromUrl(file, options as never), named);
    expect(existsSync(file)).toBe(false);
  });

  it("the options it knows still open a store that works", async () => {
    const store = await DrizzleStore.fromUrl(await sqliteFile(), {
      driver: "better-sqlite3",
      ttl: { defaultTtl: 60, refreshOnRead: false, sweepIntervalMinutes: 5 },
      index: { dims: 2, embed, fields: ["$"], native: { ifAvailable: true, exactBelow: 0 } },
      clock: Date.now,
    });
    try {
      await store.setup();
      await store.put(["a"], "k", { text: "x" });
      expect((await store.get(["a"], "k"))?.value).toEqual({ text: "x" });
    } finally {
      await store.close();
    }
  });
});

describe("fromUrl on the servers", () => {
  it("PostgreSQL: DrizzleSaver.fromUrl refuses a misspelt encryption", async () => {
    const url = await freshDatabaseUrl("postgres");
    await expectRefused(
      () => DrizzleSaver.fromUrl(url, { encyption: encryption } as never),
      'DrizzleSaver.fromUrl: unknown option "encyption"',
    );
  });

  it("MariaDB: DrizzleStore.fromUrl refuses an unknown key of ttl", async () => {
    const url = await freshDatabaseUrl("mysql");
    await expectRefused(
      () => DrizzleStore.fromUrl(url, { ttl: { defaultTTL: 5 } } as never),
      'ttl: unknown option "defaultTTL"',
    );
  });
});
