/**
 * The order a store statement locks items in is the databases' order of the primary key:
 * UTF-8 bytes of the namespace path, then of the key ("C" collation, VARBINARY). Were it
 * JavaScript's order of UTF-16 units, a batch and a renewal (which the database sorts)
 * could lock two items in opposite orders.
 */
import { describe, expect, it } from "vitest";
import { compareKeys } from "../../src/savers/store/lock-order.js";

const CHARACTERS = [
  "",
  "a",
  "B",
  "~",
  "\u00e9",
  "\u0800",
  "\ud7ff",
  "\ue000",
  "\uffff",
  "\u{10000}",
  "\u{1f600}",
  "\u{10ffff}",
];

const byBytes = (a: string, b: string) => Math.sign(Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8")));

describe("the store's lock order", () => {
  it("compares paths, then keys, by their UTF-8 bytes", () => {
    const texts = CHARACTERS.flatMap((x) => CHARACTERS.map((y) => x + y));
    for (const a of texts) {
      for (const b of texts) {
        expect(Math.sign(compareKeys({ path: a, key: "k" }, { path: b, key: "k" })), `${a} / ${b}`).toBe(byBytes(a, b));
        expect(Math.sign(compareKeys({ path: "p", key: a }, { path: "p", key: b })), `${a} / ${b}`).toBe(byBytes(a, b));
      }
    }
    // The path decides before the key.
    expect(compareKeys({ path: "a", key: "z" }, { path: "b", key: "a" })).toBeLessThan(0);
  });

  it("is not JavaScript's order of UTF-16 units", () => {
    expect("\u{1f600}" < "\uffff").toBe(true);
    expect(compareKeys({ path: "p", key: "\u{1f600}" }, { path: "p", key: "\uffff" })).toBeGreaterThan(0);
  });
});
