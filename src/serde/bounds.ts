import { SerializationError } from "../errors.js";

/**
 * Deepest nesting a stored value may have: arrays, maps and objects, each
 * extension payload (Map, Set, message, ...) counting as one more level. Values
 * deeper than this are refused on write and on read, so whatever is written can be
 * read back, and a crafted row cannot exhaust the stack.
 */
export const MAX_NESTING_DEPTH = 1000;

const tooDeep = () => new SerializationError(`value nested deeper than ${MAX_NESTING_DEPTH} levels`);

/** Byte length of a big-endian unsigned integer of `size` bytes at `pos`, or a truncation error. */
function readLength(bytes: Uint8Array, pos: number, size: number): number {
  if (pos + size > bytes.length) throw new SerializationError("truncated msgpack data");
  let value = 0;
  for (let i = 0; i < size; i++) value = value * 256 + bytes[pos + i];
  return value;
}

/** Payload sizes of fixext 1, 2, 4, 8, 16 (head bytes 0xd4 to 0xd8). */
const FIXEXT_SIZES = [1, 2, 4, 8, 16];
/** Bytes after the head byte of the fixed-size types, by head byte (0xc0 to 0xd3). */
const FIXED_SIZES: Record<number, number> = {
  192: 0,
  194: 0,
  195: 0,
  202: 4,
  203: 8,
  204: 1,
  205: 2,
  206: 4,
  207: 8,
  208: 1,
  209: 2,
  210: 4,
  211: 8,
};

type Item =
  | { kind: "scalar"; header: number; length: number }
  | { kind: "container"; header: number; items: number }
  /** `header` stops before the extension's type byte; `length` is its payload's. */
  | { kind: "ext"; header: number; length: number };

/** What the head byte `head` at `pos` announces, without reading its payload. */
function itemAt(bytes: Uint8Array, pos: number, head: number): Item {
  if (head <= 0x7f || head >= 0xe0) return { kind: "scalar", header: 1, length: 0 };
  if (head <= 0x8f) return { kind: "container", header: 1, items: 2 * (head - 0x80) };
  if (head <= 0x9f) return { kind: "container", header: 1, items: head - 0x90 };
  if (head <= 0xbf) return { kind: "scalar", header: 1, length: head - 0xa0 };
  if (head in FIXED_SIZES) return { kind: "scalar", header: 1, length: FIXED_SIZES[head] };
  const sized = (size: number) => readLength(bytes, pos + 1, size);
  switch (head) {
    case 0xc4:
    case 0xd9:
      return { kind: "scalar", header: 2, length: sized(1) };
    case 0xc5:
    case 0xda:
      return { kind: "scalar", header: 3, length: sized(2) };
    case 0xc6:
    case 0xdb:
      return { kind: "scalar", header: 5, length: sized(4) };
    case 0xc7:
      return { kind: "ext", header: 2, length: sized(1) };
    case 0xc8:
      return { kind: "ext", header: 3, length: sized(2) };
    case 0xc9:
      return { kind: "ext", header: 5, length: sized(4) };
    case 0xdc:
      return { kind: "container", header: 3, items: sized(2) };
    case 0xdd:
      return { kind: "container", header: 5, items: sized(4) };
    case 0xde:
      return { kind: "container", header: 3, items: 2 * sized(2) };
    case 0xdf:
      return { kind: "container", header: 5, items: 2 * sized(4) };
  }
  if (head >= 0xd4 && head <= 0xd8) return { kind: "ext", header: 1, length: FIXEXT_SIZES[head - 0xd4] };
  throw new SerializationError(`invalid msgpack type byte 0x${head.toString(16)}`);
}

/**
 * Checks a MessagePack document before it is decoded: every declared length fits in
 * the bytes that follow it (the elements still owed by all open arrays and maps
 * together need at least one byte each, so no header can make the decoder allocate
 * more than the input holds), and nothing is nested deeper than
 * {@link MAX_NESTING_DEPTH}. The payloads of the extension types in `nested` are
 * MessagePack themselves and are checked the same way, one level deeper.
 */
export function checkMsgpack(bytes: Uint8Array, nested: ReadonlySet<number>, baseDepth = 0): void {
  if (baseDepth > MAX_NESTING_DEPTH) throw tooDeep();
  const open: number[] = []; // elements still owed by each open array or map
  let owed = 1; // the top-level value
  let pos = 0;
  while (owed > 0) {
    if (pos >= bytes.length) throw new SerializationError("truncated msgpack data");
    const item = itemAt(bytes, pos, bytes[pos]);
    owed--;
    if (open.length > 0) open[open.length - 1]--;
    pos += item.header;
    const remaining = bytes.length - pos;
    if (item.kind === "container") {
      if (owed + item.items > remaining) {
        throw new SerializationError(`msgpack header declares ${item.items} elements, more than the data holds`);
      }
      if (item.items > 0) {
        open.push(item.items);
        owed += item.items;
        if (baseDepth + open.length > MAX_NESTING_DEPTH) throw tooDeep();
      }
    } else {
      const length = item.kind === "ext" ? item.length + 1 : item.length;
      if (length > remaining) {
        throw new SerializationError(`msgpack header declares ${item.length} bytes, more than the data holds`);
      }
      if (item.kind === "ext" && nested.has((bytes[pos] << 24) >> 24)) {
        checkMsgpack(bytes.subarray(pos + 1, pos + length), nested, baseDepth + open.length + 1);
      }
      pos += length;
    }
    while (open.length > 0 && open[open.length - 1] === 0) open.pop();
  }
}

/** Refuses JSON text nested deeper than {@link MAX_NESTING_DEPTH}, before it is parsed. */
export function checkJsonDepth(text: string): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (inString) {
      if (char === 0x5c)
        i++; // backslash: skip the escaped character
      else if (char === 0x22) inString = false;
    } else if (char === 0x22) inString = true;
    else if (char === 0x5b || char === 0x7b) {
      if (++depth > MAX_NESTING_DEPTH) throw tooDeep();
    } else if (char === 0x5d || char === 0x7d) depth--;
  }
}
