import { randomBytes } from "node:crypto";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { DecryptionError, InvalidInputError, Sealer } from "../../src/index.js";
import { OpenedValues } from "../../src/serde/opened-values.js";
import { freshSaver } from "../helpers/databases.js";
import { KEY_1, TEST_ENCRYPTION } from "./keys.js";

/**
 * The Sealer's memory of values it opened (encryption.cacheBytes): a hit returns
 * exactly what opening would, never masks a changed or moved value, and stays in its bound.
 */
const PLACE = ["blob", "thread-1", "", "messages", "7", ""];

function sealer(cacheBytes?: number): Sealer {
  return new Sealer({ ...TEST_ENCRYPTION, ...(cacheBytes === undefined ? {} : { cacheBytes }) });
}

describe("the memory of opened values", () => {
  it("opens a value again from memory, as a copy the caller may change; sealing remembers only when asked", () => {
    const memory = sealer();
    const [storedType, sealed] = memory.seal("msgpack", Buffer.from("hello"), PLACE);
    expect(memory.cacheStats()).toEqual({ hits: 0, misses: 0, entries: 0, bytes: 0 });
    const [type, plain] = memory.open(storedType, Buffer.from(sealed), PLACE, "the value");
    expect([type, Buffer.from(plain).toString()]).toEqual(["msgpack", "hello"]);
    expect(memory.cacheStats()).toMatchObject({ hits: 0, misses: 1, entries: 1 });
    plain[0] = 0x58;
    expect(Buffer.from(memory.open(storedType, sealed, PLACE, "the value")[1]).toString()).toBe("hello");
    expect(memory.cacheStats()).toMatchObject({ hits: 1, misses: 1, entries: 1 });
  });

  it("serves a value sealed with remember from memory, a copy of what was sealed; never another sealing", () => {
    const memory = sealer();
    const plain = Buffer.from("written");
    const [storedType, sealed] = memory.seal("msgpack", plain, PLACE, true);
    expect(memory.cacheStats()).toMatchObject({ hits: 0, misses: 0, entries: 1 });
    // The caller's buffer may change after sealing: memory holds its own copy.
    plain.fill(0x58);
    const [type, opened] = memory.open(storedType, Buffer.from(sealed), PLACE, "the value");
    expect([type, Buffer.from(opened).toString()]).toEqual(["msgpack", "written"]);
    expect(memory.cacheStats()).toMatchObject({ hits: 1, misses: 0 });
    // The same plaintext sealed again has a fresh nonce: its bytes match no entry but their own.
    const [, other] = memory.seal("msgpack", Buffer.from("written"), PLACE);
    expect(Buffer.from(memory.open(storedType, other, PLACE, "again")[1]).toString()).toBe("written");
    expect(memory.cacheStats()).toMatchObject({ hits: 1, misses: 1 });
    const flipped = Buffer.from(sealed);
    flipped[flipped.length - 20] ^= 1;
    expect(() => memory.open(storedType, flipped, PLACE, "flipped")).toThrow(DecryptionError);
    expect(() => memory.open(storedType, sealed, [...PLACE.slice(0, 4), "8", ""], "moved")).toThrow(DecryptionError);
  });

  it("never serves a changed byte, another place or another stored type: those are opened and refused", () => {
    const memory = sealer();
    const [storedType, sealed] = memory.seal("msgpack", Buffer.from("secret"), PLACE);
    memory.open(storedType, sealed, PLACE, "remembered");
    const flipped = Buffer.from(sealed);
    flipped[14] ^= 1;
    expect(() => memory.open(storedType, flipped, PLACE, "flipped")).toThrow(DecryptionError);
    expect(() => memory.open(storedType, sealed, [...PLACE.slice(0, 4), "8", ""], "moved")).toThrow(DecryptionError);
    expect(() => memory.open(storedType, sealed, [...PLACE, ""], "longer place")).toThrow(DecryptionError);
    expect(() => memory.open("enc1.k1:json", sealed, PLACE, "retyped")).toThrow(DecryptionError);
    expect(memory.cacheStats()).toMatchObject({ hits: 0, misses: 5 });
  });

  it("keeps within cacheBytes, oldest out first, and keeps nothing with cacheBytes: 0", () => {
    const bound = 64 * 1024;
    const memory = sealer(bound);
    const placeOf = (i: number) => [...PLACE.slice(0, 4), String(i), ""];
    const values = Array.from({ length: 200 }, (_, i) => memory.seal("msgpack", Buffer.alloc(1000, i), placeOf(i)));
    const open = (i: number) => memory.open(values[i][0], values[i][1], placeOf(i), "v");
    for (let i = 0; i < 200; i++) open(i);
    const stats = memory.cacheStats();
    expect(stats).toMatchObject({ hits: 0, misses: 200 });
    expect(stats.bytes).toBeLessThanOrEqual(bound);
    expect(stats.entries).toBeGreaterThan(10);
    expect(stats.entries).toBeLessThan(200);
    expect(open(199)[1]).toEqual(Buffer.alloc(1000, 199));
    expect(open(0)[1]).toEqual(Buffer.alloc(1000, 0));
    expect(memory.cacheStats()).toMatchObject({ hits: 1, misses: 201 });
    // A value read again is given a second chance: it outlives values opened after it.
    for (let i = 0; i < 200; i++) open(199);
    for (let i = 100; i < 130; i++) open(i);
    const before = memory.cacheStats().hits;
    open(199);
    expect(memory.cacheStats().hits).toBe(before + 1);

    const none = sealer(0);
    const [storedType, sealed] = none.seal("msgpack", Buffer.from("x"), PLACE);
    none.open(storedType, sealed, PLACE, "v");
    none.open(storedType, sealed, PLACE, "v");
    expect(none.cacheStats()).toEqual({ hits: 0, misses: 0, entries: 0, bytes: 0 });
  });

  it("holds about cacheBytes of memory, not the pool slabs its small values were copied from", async () => {
    // Garbage collection on demand, so that what is measured is only what stays reachable.
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    // V8 frees array buffers' memory on a background thread after a collection: collect
    // until two readings agree (a loaded machine may take a while).
    const collect = async () => {
      let last = -1;
      for (let i = 0; i < 100; i++) {
        gc();
        await new Promise((resolve) => setTimeout(resolve, 50));
        const now = process.memoryUsage().arrayBuffers;
        if (now === last) return;
        last = now;
      }
    };
    const bound = 4 * 1024 * 1024;
    const memory = sealer(bound);
    const transient: Buffer[] = [];
    await collect();
    const before = process.memoryUsage().arrayBuffers;
    for (let i = 0; i < 40_000; i++) {
      const place = [...PLACE.slice(0, 4), String(i), ""];
      const [storedType, sealed] = memory.seal("msgpack", Buffer.alloc([1, 343, 395, 1962][i % 4], i), place);
      memory.open(storedType, Buffer.from(sealed), place, "v");
      // Short-lived small buffers between opens, as a read's rows and decoding make them.
      transient.push(Buffer.allocUnsafe(200));
      if (transient.length > 100) transient.shift();
    }
    transient.length = 0;
    await collect();
    const held = process.memoryUsage().arrayBuffers - before;
    expect(memory.cacheStats().bytes).toBeLessThanOrEqual(bound);
    // Were small copies taken from Node's Buffer pool, each would keep its 8 KiB slab (3.5x the
    // bound); were evicted entries left in the eviction queue, their bytes would stay too (1.3x).
    expect(held).toBeLessThan(1.1 * bound);
  });

  it("opens values sealed by the released format (fixed vectors), ASCII places and others", () => {
    // Sealed with KEY_1 by the code of 0.x before the associated data was built as one text.
    const vectors: [string[], string][] = [
      [["blob", "thread-1", "", "messages", "7", ""], "qqrl+7GyIkXISprQuW+PF4jyXjgIvBZrjSo++rMBAtscCgf1xAkezk8="],
      [
        ["write", "thr\u00ebad-\u00fc", "ns", "cp", "task", "0", "ch\u00e4nnel"],
        "5TJkFiMRaXDfzeun7v9tyWdtbR2P9HXLzATvMWoWCYkpxUVgv/UsF40=",
      ],
    ];
    for (const [place, data] of vectors) {
      const [type, plain] = sealer().open("enc1.k1:msgpack", Buffer.from(data, "base64"), place, "the vector");
      expect([type, Buffer.from(plain).toString()]).toEqual(["msgpack", "sealed by 0.x"]);
    }
  });

  it("takes memory only as values are remembered, however large cacheBytes is", () => {
    const memory = sealer(Number.MAX_SAFE_INTEGER);
    const [storedType, sealed] = memory.seal("msgpack", Buffer.from("kept"), PLACE);
    memory.open(storedType, sealed, PLACE, "v");
    expect(Buffer.from(memory.open(storedType, sealed, PLACE, "v")[1]).toString()).toBe("kept");
    expect(memory.cacheStats()).toMatchObject({ hits: 1, misses: 1, entries: 1 });
  });

  it("serves only what it was given, through slots reused, keys replaced and chunks passed over", () => {
    const bound = 64 * 1024;
    const memory = new OpenedValues(bound);
    let state = 7;
    const random = () => {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      return state / 2 ** 32;
    };
    const types = ["enc1.k1:msgpack", "enc1.k1:json"];
    const made: [string, Buffer, Buffer, Buffer][] = [];
    let served = 0;
    for (let i = 0; i < 6000; i++) {
      if (made.length === 0 || random() < 0.4) {
        const sealed = randomBytes(20 + (i % 300));
        const place = Buffer.from(`place-${i % 7}`);
        const plain = randomBytes(i % 200);
        const type = types[i % 2];
        const earlier = made.length > 0 && random() < 0.1 ? made[Math.floor(random() * made.length)] : undefined;
        // A sealed value whose tag starts as an earlier one's: the same map key, told apart by its bytes.
        if (earlier) earlier[1].copy(sealed, sealed.length - 16, earlier[1].length - 16, earlier[1].length - 12);
        memory.remember(type, sealed, place, plain);
        made.push([type, sealed, place, plain]);
        expect(memory.get(type, sealed, place)).toEqual(plain);
        if (earlier && !earlier[1].equals(sealed))
          expect(memory.get(earlier[0], earlier[1], earlier[2])).toBeUndefined();
        continue;
      }
      const [type, sealed, place, plain] = made[Math.floor(random() * made.length)];
      const got = memory.get(type, sealed, place);
      expect(memory.get(types[1 - types.indexOf(type)], sealed, place)).toBeUndefined();
      if (got) {
        expect(got).toEqual(plain);
        served++;
      }
      const elsewhere = Buffer.from(place);
      elsewhere[elsewhere.length - 1] ^= 1;
      expect(memory.get(type, sealed, elsewhere)).toBeUndefined();
    }
    expect(served).toBeGreaterThan(100);
    const { bytes, entries } = memory.stats();
    expect(bytes).toBeGreaterThan(0);
    expect(bytes).toBeLessThanOrEqual(bound);
    expect(entries).toBeGreaterThan(10);
  });

  it("numbers at most 64 stored types: values of others are opened every time", () => {
    const memory = new OpenedValues(1024 * 1024);
    const entries = Array.from(
      { length: 70 },
      (_, i) => [`enc1.k1:type-${i}`, randomBytes(40), Buffer.from("p")] as const,
    );
    for (const [type, sealed, place] of entries) memory.remember(type, sealed, place, Buffer.from(type));
    entries.forEach(([type, sealed, place], i) => {
      expect(memory.get(type, sealed, place)).toEqual(i < 64 ? Buffer.from(type) : undefined);
    });
  });

  it("refuses a cacheBytes that is not a whole number of bytes", () => {
    for (const cacheBytes of [-1, 1.5, Number.NaN]) {
      expect(() => new Sealer({ keys: { k1: KEY_1 }, activeKeyId: "k1", cacheBytes })).toThrow(InvalidInputError);
    }
  });

  it("a saver reads back the channel values it wrote, and a tuple it read, with no cipher", async () => {
    const { saver } = await freshSaver("sqlite", { encryption: TEST_ENCRYPTION });
    try {
      const config = await saver.put(
        { configurable: { thread_id: "t", checkpoint_ns: "" } },
        {
          v: 4,
          id: "1ef00000-0000-6000-8000-000000000001",
          ts: new Date().toISOString(),
          channel_values: { a: "one", b: ["two"] },
          channel_versions: { a: 1, b: 1 },
          versions_seen: {},
        },
        { source: "loop", step: 0, parents: {} },
        { a: 1, b: 1 },
      );
      await saver.putWrites(config, [["a", "pending"]], "task");
      const stats = (saver as unknown as { sealing: { sealer: Sealer } }).sealing.sealer;
      // The two channel values were remembered as they were sealed; the pending write was not.
      const first = await saver.getTuple(config);
      expect(stats.cacheStats()).toMatchObject({ hits: 2, misses: 1 });
      const again = await saver.getTuple(config);
      expect(stats.cacheStats()).toMatchObject({ hits: 5, misses: 1 });
      for (const tuple of [first, again]) {
        expect(tuple?.checkpoint.channel_values).toEqual({ a: "one", b: ["two"] });
        expect(tuple?.pendingWrites).toEqual([["task", "a", "pending"]]);
      }
    } finally {
      await saver.close();
    }
  });
});
