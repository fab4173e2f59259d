/**
 * Checks on stored values before they are decoded: a nesting depth limit, and MessagePack
 * lengths that must fit the bytes that follow, so a crafted row cannot exhaust the stack or memory.
 */
import { SerializationError } from "../errors.js";

/**
 * Deepest nesting a stored value may have: arrays, maps and objects, each
 * extension payload (Map, Set, message, ...) counting as one more level. Values
 * deeper than this are refused on write and on read, so whatever is written can be
 * read back, and a crafted row cannot exhaust the stack.
 */
export const MAX_NESTING_DEPTH = 1000;

const tooDeep = (most = MAX_NESTING_DEPTH) => new SerializationError(`value nested deeper than ${most} levels`);

/** Byte length of a big-endian unsigned integer of `size` bytes at `pos`, or a truncation error. */
function readLength(bytes: Uint8Array, pos: number, size: number): number {
  if (pos + size > end) throw new SerializationError("truncated msgpack data");
  let value = 0;
  for (let i = 0; i < size; i++) value = value * 256 + bytes[pos + i];
  return value;
}

/** Payload sizes of fixext 1, 2, 4, 8, 16 (head bytes 0xd4 to 0xd8). */
const FIXEXT_SIZES = [1, 2, 4, 8, 16];
/** Bytes after the head byte of the fixed-size types, by head byte (0xc0 to 0xd3). */
const FIXED_SIZES: Partial<Record<number, number>> = {
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

/** What a head byte announces (see readItem): a scalar, a container or an extension. */
const SCALAR = 0;
const CONTAINER = 1;
/** `header` stops before the extension's type byte; `size` is its payload's length. */
const EXT = 2;

/**
 * The header length and size of the item read last by {@link readItem}, which returns
 * its kind: module state rather than an object per element, since the check runs
 * over every stored value a read decodes.
 */
let header = 0;
/** Payload bytes of a scalar or extension, elements of a container. */
let size = 0;
/** Where the document being checked ends in its buffer (an extension's payload ends before the buffer does). */
let end = 0;

/** Reads what the head byte `head` at `pos` announces, without reading its payload; returns its kind. */
function readItem(bytes: Uint8Array, pos: number, head: number): number {
  if (head <= 0x7f || head >= 0xe0) return set(SCALAR, 1, 0);
  if (head <= 0x8f) return set(CONTAINER, 1, 2 * (head - 0x80));
  if (head <= 0x9f) return set(CONTAINER, 1, head - 0x90);
  if (head <= 0xbf) return set(SCALAR, 1, head - 0xa0);
  const fixed = FIXED_SIZES[head];
  if (fixed !== undefined) return set(SCALAR, 1, fixed);
  switch (head) {
    case 0xc4:
    case 0xd9:
      return set(SCALAR, 2, readLength(bytes, pos + 1, 1));
    case 0xc5:
    case 0xda:
      return set(SCALAR, 3, readLength(bytes, pos + 1, 2));
    case 0xc6:
    case 0xdb:
      return set(SCALAR, 5, readLength(bytes, pos + 1, 4));
    case 0xc7:
      return set(EXT, 2, readLength(bytes, pos + 1, 1));
    case 0xc8:
      return set(EXT, 3, readLength(bytes, pos + 1, 2));
    case 0xc9:
      return set(EXT, 5, readLength(bytes, pos + 1, 4));
    case 0xdc:
      return set(CONTAINER, 3, readLength(bytes, pos + 1, 2));
    case 0xdd:
      return set(CONTAINER, 5, readLength(bytes, pos + 1, 4));
    case 0xde:
      return set(CONTAINER, 3, 2 * readLength(bytes, pos + 1, 2));
    case 0xdf:
      return set(CONTAINER, 5, 2 * readLength(bytes, pos + 1, 4));
  }
  if (head >= 0xd4 && head <= 0xd8) return set(EXT, 1, FIXEXT_SIZES[head - 0xd4]);
  throw new SerializationError(`invalid msgpack type byte 0x${head.toString(16)}`);
}

function set(itemKind: number, itemHeader: number, itemSize: number): number {
  header = itemHeader;
  size = itemSize;
  return itemKind;
}

/**
 * Checks a MessagePack document before it is decoded: every declared length fits in
 * the bytes that follow it (the elements still owed by all open arrays and maps
 * together need at least one byte each, so no header can make the decoder allocate
 * more than the input holds), and nothing is nested deeper than
 * {@link MAX_NESTING_DEPTH}. The payloads of the extension types in `nested` are
 * MessagePack themselves and are checked the same way, one level deeper.
 */
export function checkMsgpack(bytes: Uint8Array, nested: ReadonlySet<number>): void {
  checkDocument(bytes, nested, 0, 0, bytes.length);
}

/** checkMsgpack of the document in bytes[start, stop): a range, not a subarray per extension payload. */
function checkDocument(bytes: Uint8Array, nested: ReadonlySet<number>, baseDepth: number, start: number, stop: number) {
  if (baseDepth > MAX_NESTING_DEPTH) throw tooDeep();
  const open: number[] = []; // elements still owed by each open array or map
  let owed = 1; // the top-level value
  let pos = start;
  while (owed > 0) {
    end = stop; // a nested document's check moved it
    if (pos >= stop) throw new SerializationError("truncated msgpack data");
    const kind = readItem(bytes, pos, bytes[pos]);
    owed--;
    if (open.length > 0) open[open.length - 1]--;
    pos += header;
    const remaining = stop - pos;
    if (kind === CONTAINER) {
      if (owed + size > remaining) {
        throw new SerializationError(`msgpack header declares ${size} elements, more than the data holds`);
      }
      if (size > 0) {
        open.push(size);
        owed += size;
        if (baseDepth + open.length > MAX_NESTING_DEPTH) throw tooDeep();
      }
    } else {
      const length = kind === EXT ? size + 1 : size;
      if (length > remaining) {
        throw new SerializationError(`msgpack header declares ${size} bytes, more than the data holds`);
      }
      if (kind === EXT && nested.has((bytes[pos] << 24) >> 24)) {
        // The recursive check overwrites the item state; nothing of it is used afterwards.
        checkDocument(bytes, nested, baseDepth + open.length + 1, pos + 1, pos + length);
      }
      pos += length;
    }
    while (open.length > 0 && open[open.length - 1] === 0) open.pop();
  }
}

/**
 * Refuses JSON text nested deeper than `most` levels ({@link MAX_NESTING_DEPTH}), or holding
 * more than `mostContainers` arrays and objects, before it is parsed.
 */
export function checkJsonDepth(
  text: string,
  most = MAX_NESTING_DEPTH,
  mostContainers = Number.POSITIVE_INFINITY,
): void {
  let depth = 0;
  let containers = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (inString) {
      if (char === 0x5c)
        i++; // backslash: skip the escaped character
      else if (char === 0x22) inString = false;
    } else if (char === 0x22) inString = true;
    else if (char === 0x5b || char === 0x7b) {
      if (++depth > most) throw tooDeep(most);
      if (++containers > mostContainers) {
        throw new SerializationError(`value holding more than ${mostContainers} arrays and objects`);
      }
    } else if (char === 0x5d || char === 0x7d) depth--;
  }
}
