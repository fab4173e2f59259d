import { describe, expect, it } from "vitest";
import { DecryptionError, InvalidInputError, MissingKeyError, Sealer } from "../../src/index.js";

/** The Sealer alone (no database): its options, its format, and what it refuses to open. */
const KEY = Buffer.alloc(32, 7);
const PLACE = ["blob", "thread", "", "messages", "0001.42", ""];

describe("Sealer", () => {
  it("refuses bad options before anything is sealed", () => {
    expect(() => new Sealer({ keys: { k: Buffer.alloc(16) }, activeKeyId: "k" })).toThrow(/32 bytes, got 16/);
    expect(() => new Sealer({ keys: { k: "not base64!" }, activeKeyId: "k" })).toThrow(InvalidInputError);
    expect(() => new Sealer({ keys: { "a:b": KEY }, activeKeyId: "a:b" })).toThrow(/key id/);
    expect(() => new Sealer({ keys: { k: KEY }, activeKeyId: "other" })).toThrow(/not among the keys/);
    expect(() => new Sealer({ keys: { k: 42 as unknown as string }, activeKeyId: "k" })).toThrow(InvalidInputError);
  });

  it("seals with a fresh nonce each time; base64 and bytes name the same key", () => {
    const bytes = new Sealer({ keys: { k: KEY }, activeKeyId: "k" });
    const text = new Sealer({ keys: { k: KEY.toString("base64") }, activeKeyId: "k" });
    const [type, one] = bytes.seal("msgpack", Buffer.from("hello"), PLACE);
    const [, two] = bytes.seal("msgpack", Buffer.from("hello"), PLACE);
    expect(type).toBe("enc1.k:msgpack");
    expect(one.length).toBe(5 + 28);
    expect(Buffer.from(one).equals(Buffer.from(two))).toBe(false);
    const [inner, plain] = text.open(type, one, PLACE, "v");
    expect(inner).toBe("msgpack");
    expect(Buffer.from(plain).toString()).toBe("hello");
  });

  it("refuses another place, another type, another key id, a missing key and plaintext", () => {
    const sealer = new Sealer({ keys: { k: KEY, j: Buffer.alloc(32, 8) }, activeKeyId: "k" });
    const [type, data] = sealer.seal("msgpack", Buffer.from("hello"), PLACE);
    expect(() => sealer.open(type, data, [...PLACE.slice(0, 5), "x"], "v")).toThrow(DecryptionError);
    expect(() => sealer.open("enc1.k:json", data, PLACE, "v")).toThrow(DecryptionError);
    expect(() => sealer.open("enc1.j:msgpack", data, PLACE, "v")).toThrow(DecryptionError);
    const missing = (() => {
      try {
        sealer.open("enc1.gone:msgpack", data, PLACE, "the value");
      } catch (error) {
        return error;
      }
    })();
    expect(missing).toBeInstanceOf(MissingKeyError);
    expect(String(missing)).toContain('key "gone"');
    expect(() => sealer.open("msgpack", Buffer.from("hello"), PLACE, "v")).toThrow(/in the clear/);
    expect(sealer.open("msgpack", Buffer.from("hello"), PLACE, "v", true)[0]).toBe("msgpack");
  });
});
