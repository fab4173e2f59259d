import { type Checkpoint, JsonPlusSerializer, uuid6 } from "@langchain/langgraph-checkpoint";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DecryptionError, DrizzleSaver, type EncryptionOptions, MissingKeyError } from "../../src/index.js";
import { DIALECTS, type DialectName, freshSaver } from "../helpers/databases.js";
import { dumpTable, openRaw, type RawDatabase, type RawRow } from "../helpers/raw.js";
import { KEY_1, KEY_2 } from "./keys.js";
import { grow } from "./threads.js";

/**
 * Encryption at rest on every dialect: what a dump of the tables shows, key rotation,
 * rows moved or changed by SQL, plaintext rows, missing keys.
 */
const ONLY_K1: EncryptionOptions = { keys: { k1: KEY_1 }, activeKeyId: "k1" };
const BOTH: EncryptionOptions = { keys: { k1: KEY_1, k2: KEY_2 }, activeKeyId: "k2" };
const ONLY_K2: EncryptionOptions = { keys: { k2: KEY_2 }, activeKeyId: "k2" };

/** Every row of every table, as text (bytes both as UTF-8 and as latin1, so no encoding hides a match). */
async function dumpAll(raw: RawDatabase): Promise<string> {
  const tables =
    raw.dialect === "sqlite"
      ? (await raw.query("select name as t from sqlite_master where type = 'table'")).map((r) => r.t)
      : raw.dialect === "postgres"
        ? (await raw.query("select tablename as t from pg_tables where schemaname = 'public'")).map((r) => r.t)
        : (
            await raw.query("select table_name as t from information_schema.tables where table_schema = database()")
          ).map((r) => r.t ?? r.TABLE_NAME);
  expect(tables.length).toBeGreaterThan(3);
  let dump = "";
  for (const table of tables) dump += await dumpTable(raw, String(table));
  return dump;
}

describe.each(DIALECTS)("encryption at rest on %s", (dialect: DialectName) => {
  let saver: DrizzleSaver;
  let url: string;
  let raw: RawDatabase;
  const blobs = (raw_: RawDatabase) => raw_.id("checkpoint_blobs");
  const writes = (raw_: RawDatabase) => raw_.id("checkpoint_writes");

  beforeAll(async () => {
    ({ saver, url } = await freshSaver(dialect, { encryption: ONLY_K1 }));
    raw = await openRaw(dialect, url);
  });
  afterAll(async () => {
    await saver.close();
    await raw.close();
  });

  /** One blob row of a thread's channel (the newest version), raw. */
  async function blobRow(threadId: string, channel: string): Promise<RawRow> {
    const rows = await raw.query(
      `select version, ${raw.id("type")} as type, ${raw.id("blob")} as data from ${blobs(raw)} where thread_id = ? and channel = ? order by version desc`,
      [threadId, channel],
    );
    expect(rows.length).toBeGreaterThan(0);
    return rows[0];
  }

  async function setBlob(threadId: string, channel: string, version: unknown, type: unknown, data: unknown) {
    await raw.query(
      `update ${blobs(raw)} set ${raw.id("type")} = ?, ${raw.id("blob")} = ? where thread_id = ? and channel = ? and version = ?`,
      [type, data, threadId, channel, version],
    );
  }

  it("a dump of every table holds none of the plaintext of values and writes; savers read them back", async () => {
    const { configs, messages } = await grow(saver, "dump", "SECRET-ALPHA");
    const dump = await dumpAll(raw);
    expect(dump).toContain("dump"); // the thread id is in the clear: the dump did read the rows
    expect(dump).not.toContain("SECRET-ALPHA");
    expect(dump).toContain("enc1.k1:");
    // The writing saver remembers the channel values it sealed; one without that memory opens every stored value.
    const cold = await DrizzleSaver.fromUrl(url, { encryption: { ...ONLY_K1, cacheBytes: 0 } });
    try {
      for (const reader of [saver, cold]) {
        const tuple = await reader.getTuple(configs[2]);
        expect(tuple?.checkpoint.channel_values).toEqual({ messages, note: "SECRET-ALPHA note 2" });
        expect(tuple?.pendingWrites).toEqual([["task-2", "note", "SECRET-ALPHA write 2"]]);
        const listed = [];
        for await (const t of reader.list({ configurable: { thread_id: "dump" } })) listed.push(t);
        expect(listed.map((t) => t.checkpoint.channel_values.messages)).toEqual([
          messages,
          messages.slice(0, 2),
          messages.slice(0, 1),
        ]);
        const history = await reader.getDeltaChannelHistory({ config: configs[2], channels: ["note"] });
        expect(history.note.writes.map(([, , value]) => value)).toEqual(["SECRET-ALPHA write 1"]);
        expect(history.note.seed).toBe("SECRET-ALPHA note 1");
      }
    } finally {
      await cold.close();
    }
  });

  it("copyThread re-seals the copied values for the new thread; the copy reads like the source", async () => {
    const { configs } = await grow(saver, "copy-src", "COPY", 3);
    await saver.copyThread("copy-src", "copy-dst");
    const source = await saver.getTuple(configs[2]);
    const copy = await saver.getTuple({ configurable: { ...configs[2].configurable, thread_id: "copy-dst" } });
    expect(copy?.checkpoint.channel_values).toEqual(source?.checkpoint.channel_values);
    expect(copy?.pendingWrites).toEqual(source?.pendingWrites);
    const copied = await blobRow("copy-dst", "note");
    expect(String(copied.type)).toMatch(/^enc1\.k1:/);
    expect(Buffer.from(copied.data as Uint8Array)).not.toEqual(
      Buffer.from((await blobRow("copy-src", "note")).data as Uint8Array),
    );
  });

  it("copyThread of an unknown source is refused, as without encryption, and writes nothing", async () => {
    await expect(saver.copyThread("copy-missing-src", "copy-missing-dst")).rejects.toThrow(
      'copyThread: source thread "copy-missing-src" has no checkpoints; nothing was copied',
    );
    expect(await saver.getTuple({ configurable: { thread_id: "copy-missing-dst" } })).toBeUndefined();
  });

  it("excludeMetadataKeys keeps those metadata keys out of the database", async () => {
    const excluding = await DrizzleSaver.fromUrl(url, { encryption: ONLY_K1, excludeMetadataKeys: ["email"] });
    try {
      const checkpoint: Checkpoint = {
        v: 4,
        id: uuid6(0),
        ts: new Date().toISOString(),
        channel_values: {},
        channel_versions: {},
        versions_seen: {},
      };
      const metadata = { source: "input" as const, step: -1, parents: {}, email: "PRIVATE@EXAMPLE.ORG", user_id: "u1" };
      const config = await excluding.put({ configurable: { thread_id: "meta" } }, checkpoint, metadata, {});
      expect((await excluding.getTuple(config))?.metadata).toEqual({
        source: "input",
        step: -1,
        parents: {},
        user_id: "u1",
      });
      expect(await dumpAll(raw)).not.toContain("PRIVATE@EXAMPLE.ORG");
    } finally {
      await excluding.close();
    }
  });

  it("works with the serializer the application chooses (LangGraph's JsonPlusSerializer)", async () => {
    const json = await DrizzleSaver.fromUrl(url, { encryption: ONLY_K1, serde: new JsonPlusSerializer() });
    try {
      const { configs, messages } = await grow(json, "json-serde", "JSON-SERDE");
      expect(String((await blobRow("json-serde", "note")).type)).toBe("enc1.k1:json");
      const tuple = await json.getTuple(configs[2]);
      expect(tuple?.checkpoint.channel_values).toEqual({ messages, note: "JSON-SERDE note 2" });
      expect(tuple?.pendingWrites).toEqual([["task-2", "note", "JSON-SERDE write 2"]]);
      expect(await dumpAll(raw)).not.toContain("JSON-SERDE");
    } finally {
      await json.close();
    }
  });

  it("rotation: a saver with a new active key reads the old values and seals new ones with the new key", async () => {
    await grow(saver, "rot-old", "ROT");
    const rotated = await DrizzleSaver.fromUrl(url, { encryption: BOTH });
    const onlyNew = await DrizzleSaver.fromUrl(url, { encryption: ONLY_K2 });
    try {
      const old = await rotated.getTuple({ configurable: { thread_id: "rot-old" } });
      expect(old?.checkpoint.channel_values.note).toBe("ROT note 2");
      const { messages } = await grow(rotated, "rot-new", "ROT2");
      expect(String((await blobRow("rot-new", "note")).type)).toMatch(/^enc1\.k2:/);
      // The old saver lacks k2; the new one with only k2 reads new values and names k1 for old ones.
      await expect(saver.getTuple({ configurable: { thread_id: "rot-new" } })).rejects.toThrow(/key "k2"/);
      expect((await onlyNew.getTuple({ configurable: { thread_id: "rot-new" } }))?.checkpoint.channel_values).toEqual({
        messages,
        note: "ROT2 note 2",
      });
      const error = await onlyNew.getTuple({ configurable: { thread_id: "rot-old" } }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(MissingKeyError);
      expect((error as MissingKeyError).keyId).toBe("k1");
      expect(String(error)).toContain('key "k1"');
    } finally {
      await rotated.close();
      await onlyNew.close();
    }
  });

  it("other key material under a known key id fails with DecryptionError naming the id, not MissingKeyError", async () => {
    await grow(saver, "wrong-material", "WRONG");
    const impostor = await DrizzleSaver.fromUrl(url, {
      encryption: { keys: { k1: Buffer.alloc(32, 7) }, activeKeyId: "k1", cacheBytes: 0 },
    });
    try {
      const error = await impostor.getTuple({ configurable: { thread_id: "wrong-material" } }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DecryptionError);
      expect(error).not.toBeInstanceOf(MissingKeyError);
      expect(String(error)).toMatch(/thread "wrong-material".*other key material under the id "k1"/);
    } finally {
      await impostor.close();
    }
  });

  it("a value copied by SQL to another thread, another channel or another version fails with DecryptionError", async () => {
    await grow(saver, "swap-a", "SWAP-A");
    await grow(saver, "swap-b", "SWAP-B");
    const fromA = await blobRow("swap-a", "note");
    // Another thread.
    const target = await blobRow("swap-b", "note");
    await setBlob("swap-b", "note", target.version, fromA.type, fromA.data);
    const error = await saver.getTuple({ configurable: { thread_id: "swap-b" } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DecryptionError);
    expect(String(error)).toMatch(/thread "swap-b".*checkpoint "/);
    await setBlob("swap-b", "note", target.version, target.type, target.data);
    expect((await saver.getTuple({ configurable: { thread_id: "swap-b" } }))?.checkpoint.channel_values.note).toBe(
      "SWAP-B note 2",
    );
    // Another channel of the same thread (a whole value's bytes into the messages row).
    await grow(saver, "swap-c", "SWAP-C", 1);
    const note = await blobRow("swap-c", "note");
    const messages = await blobRow("swap-c", "messages");
    await setBlob("swap-c", "messages", messages.version, note.type, note.data);
    await expect(saver.getTuple({ configurable: { thread_id: "swap-c" } })).rejects.toThrow(DecryptionError);
    // Another version (checkpoint) of the same channel: the oldest note's bytes into the newest.
    const versions = await raw.query(
      `select version, ${raw.id("type")} as type, ${raw.id("blob")} as data from ${blobs(raw)} where thread_id = ? and channel = 'note' order by version`,
      ["swap-a"],
    );
    const newest = versions[versions.length - 1];
    await setBlob("swap-a", "note", newest.version, versions[0].type, versions[0].data);
    await expect(saver.getTuple({ configurable: { thread_id: "swap-a" } })).rejects.toThrow(DecryptionError);
  });

  it("a pending write copied by SQL to another checkpoint fails with DecryptionError", async () => {
    const { configs } = await grow(saver, "swap-w", "SWAP-W", 2);
    const rows = await raw.query(
      `select checkpoint_id, ${raw.id("type")} as type, ${raw.id("blob")} as data from ${writes(raw)} where thread_id = ? order by checkpoint_id`,
      ["swap-w"],
    );
    expect(rows).toHaveLength(2);
    await raw.query(
      `update ${writes(raw)} set ${raw.id("type")} = ?, ${raw.id("blob")} = ? where thread_id = ? and checkpoint_id = ?`,
      [rows[0].type, rows[0].data, "swap-w", rows[1].checkpoint_id],
    );
    const error = await saver.getTuple(configs[1]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DecryptionError);
    expect(String(error)).toContain(`checkpoint "${configs[1].configurable?.checkpoint_id}"`);
    expect(String(error)).toContain('thread "swap-w"');
  });

  it("a flipped byte fails with DecryptionError naming the thread and checkpoint", async () => {
    const { configs } = await grow(saver, "flip", "FLIP", 1);
    const row = await blobRow("flip", "note");
    const flipped = Buffer.from(row.data as Uint8Array);
    flipped[20] ^= 0x01;
    await setBlob("flip", "note", row.version, row.type, flipped);
    const error = await saver.getTuple(configs[0]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DecryptionError);
    expect(String(error)).toContain('thread "flip"');
    expect(String(error)).toContain(`checkpoint "${configs[0].configurable?.checkpoint_id}"`);
  });

  it("a flipped byte in the value getDeltaChannelHistory starts from names the checkpoint it belongs to", async () => {
    const { configs } = await grow(saver, "seed-flip", "SEEDFLIP", 3);
    // The walk from the third checkpoint starts from the second one's values.
    const parent = `checkpoint "${configs[1].configurable?.checkpoint_id}"`;
    for (const channel of ["note", "messages"]) {
      const rows = await raw.query(
        `select version, ${raw.id("type")} as type, ${raw.id("blob")} as data from ${blobs(raw)} where thread_id = ? and channel = ? order by version desc`,
        ["seed-flip", channel],
      );
      const flipped = Buffer.from(rows[1].data as Uint8Array);
      flipped[20] ^= 0x01;
      await setBlob("seed-flip", channel, rows[1].version, rows[1].type, flipped);
      const error = await saver
        .getDeltaChannelHistory({ config: configs[2], channels: [channel] })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DecryptionError);
      expect(String(error)).toMatch(new RegExp(`channel "${channel}".*thread "seed-flip".*${parent}`));
      await setBlob("seed-flip", channel, rows[1].version, rows[1].type, rows[1].data);
    }
  });

  it("a sealed row whose bytes were set to NULL fails with DecryptionError naming the thread and checkpoint", async () => {
    const { configs } = await grow(saver, "nulled", "NULLED", 1);
    const checkpoint = `checkpoint "${configs[0].configurable?.checkpoint_id}"`;
    await raw.query(`update ${writes(raw)} set ${raw.id("blob")} = null where thread_id = ?`, ["nulled"]);
    const write = await saver.getTuple(configs[0]).catch((e: unknown) => e);
    expect(write).toBeInstanceOf(DecryptionError);
    expect(String(write)).toMatch(new RegExp(`pending write .*thread "nulled".*${checkpoint}`));
    const row = await blobRow("nulled", "note");
    await setBlob("nulled", "note", row.version, row.type, null);
    const value = await saver.getTuple({ configurable: { thread_id: "nulled" } }).catch((e: unknown) => e);
    expect(value).toBeInstanceOf(DecryptionError);
    expect(String(value)).toMatch(new RegExp(`channel "note".*thread "nulled".*${checkpoint}`));
  });

  it("a plaintext row is refused, and read with allowPlaintext; a saver without keys refuses sealed rows", async () => {
    const plain = await DrizzleSaver.fromUrl(url);
    const migrating = await DrizzleSaver.fromUrl(url, { encryption: { ...ONLY_K1, allowPlaintext: true } });
    try {
      const { messages } = await grow(plain, "plain", "PLAIN");
      const error = await saver.getTuple({ configurable: { thread_id: "plain" } }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DecryptionError);
      expect(String(error)).toMatch(/in the clear/);
      const tuple = await migrating.getTuple({ configurable: { thread_id: "plain" } });
      expect(tuple?.checkpoint.channel_values).toEqual({ messages, note: "PLAIN note 2" });
      expect(tuple?.pendingWrites).toEqual([["task-2", "note", "PLAIN write 2"]]);
      await expect(plain.getTuple({ configurable: { thread_id: "dump" } })).rejects.toThrow(DecryptionError);
    } finally {
      await plain.close();
      await migrating.close();
    }
  });
});
