/**
 * The one order in which every store statement locks items (a batch's writes, a renewal,
 * a sweep): by namespace path, then key, as the databases order their primary key.
 * Statements that lock rows in one shared order never wait for each other in a cycle.
 */
import type { ItemKey } from "../../dialects/store-dialect.js";

/**
 * A batch's writes in one order of (namespace path, key), the same for every batch: each
 * statement locks its rows in its rows' order, so two batches writing the same items in
 * different orders would each hold a row the other waits for (a deadlock).
 */
export function inLockOrder<T extends { plan: ItemKey }>(rows: T[]): T[] {
  return [...rows].sort((a, b) => compareKeys(a.plan, b.plan));
}

/**
 * The order of items' locks: by path, then key, each by its UTF-8 bytes, as the databases
 * order them ("C" collation, VARBINARY). JavaScript's `<` compares UTF-16 units, which
 * puts U+10000 and above before U+E000-U+FFFF.
 */
export function compareKeys(a: ItemKey, b: ItemKey): number {
  return compareBytes(a.path, b.path) || compareBytes(a.key, b.key);
}

function compareBytes(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const [x, y] = [a.charCodeAt(i), b.charCodeAt(i)];
    if (x !== y) return byteRank(x) - byteRank(y);
  }
  return a.length - b.length;
}

/** A UTF-16 unit moved to where its character sorts in UTF-8: surrogates after U+E000-U+FFFF. */
const byteRank = (unit: number) =>
  unit >= 0xd800 && unit <= 0xdfff ? unit + 0x2000 : unit >= 0xe000 ? unit - 0x800 : unit;
