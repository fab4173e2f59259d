/**
 * The Sealer's memory of values it opened lately, by their exact sealed bytes: every read
 * of a thread re-opens the same bases of its chains, so a hit spares the cipher set-up
 * (several µs per value). The saver also remembers the channel values it seals (a thread's
 * next turn reads them back); not its pending writes, which are rarely read again. An entry
 * whose write failed matches no stored row: its nonce was fresh.
 *
 * A hit requires the same stored type, byte-identical sealed bytes and a byte-identical
 * place (its parts length-prefixed, as the associated data holds them), so it returns
 * exactly what opening would; anything else misses and is opened (and checked) as usual.
 * `cacheBytes: 0` turns it off.
 *
 * The bytes live in a ring of chunks (cacheBytes in all, each allocated when first
 * written), filled in turn: coming back to a chunk drops the values it held, except those
 * read since they were last passed over, which move to its front (second chance). An
 * entry is a span of its chunk (sealed bytes, place, plain bytes) and a slot of small
 * integers in one array (its stored type one of a few numbered ones): entries live long,
 * and an object per entry (or a buffer of its own) cost the garbage collector more than
 * the cipher set-up a hit spares.
 */

const TAG_BYTES = 16;
/** The largest chunk; there are at least MIN_CHUNKS, so a pass drops at most an eighth of what is held. */
const MAX_CHUNK_BYTES = 1024 * 1024;
const MIN_CHUNKS = 8;
/**
 * Bounds the count: at most one entry per this many bytes of cacheBytes. The bookkeeping
 * of an entry beyond its bytes (its slot, its map entry) measured about 160 bytes of heap.
 */
const ENTRY_OVERHEAD = 256;
/** Stored types numbered (a serializer has a handful, times the keys); values of others are not remembered. */
const MAX_TYPES = 64;

/** A slot's fields in `OpenedValues.slots`, FIELDS numbers per slot. */
const CHUNK = 0;
const START = 1;
const SEALED_LENGTH = 2;
const PLACE_LENGTH = 3;
const PLAIN_LENGTH = 4;
/** Its stored type's number (OpenedValues.typeIds). */
const TYPE = 5;
/** Its tagKey, or -1 once a newer entry with the same key replaced it (freed when its chunk is passed over). */
const KEY = 6;
/** 1 when read since its chunk was last passed over (second chance: a hit costs no reordering). */
const USED = 7;
const FIELDS = 8;

/**
 * 30 bits of the GCM tag (random-looking, distinct per sealing) as a small integer: a
 * cheap map key (V8 keeps it unboxed). Two values sharing it are told apart by comparing
 * their bytes; the newer one takes the key.
 */
function tagKey(sealed: Uint8Array): number {
  const end = sealed.length - TAG_BYTES;
  return (sealed[end] | (sealed[end + 1] << 8) | (sealed[end + 2] << 16) | (sealed[end + 3] << 24)) & 0x3fffffff;
}

export class OpenedValues {
  /** Slot by tagKey. */
  private readonly byKey = new Map<number, number>();
  private readonly typeIds = new Map<string, number>();
  /** FIELDS small integers per slot (see CHUNK to USED). */
  private readonly slots: number[] = [];
  private readonly freeSlots: number[] = [];
  private readonly chunks: Buffer[] = [];
  /** The slots written into each chunk, in the order written. */
  private readonly residents: number[][] = [];
  private readonly chunkCount: number;
  private readonly chunkBytes: number;
  private readonly maxEntries: number;
  /** The chunk being filled, and its first free byte. */
  private current = 0;
  private offset = 0;
  private bytes = 0;
  private hits = 0;
  private misses = 0;

  constructor(maxBytes: number) {
    // Chunks are allocated as first written, so a huge bound costs nothing until filled;
    // clamped so that chunk numbers stay array indexes.
    const bytes = Math.min(maxBytes, MAX_CHUNK_BYTES * 2 ** 30);
    this.chunkCount = Math.max(MIN_CHUNKS, Math.ceil(bytes / MAX_CHUNK_BYTES));
    this.chunkBytes = Math.floor(bytes / this.chunkCount);
    this.maxEntries = Math.floor(bytes / ENTRY_OVERHEAD);
  }

  /**
   * The plain bytes that `sealed` (of stored type `storedType`) opens to at `place` (a
   * copy: decoders may hand out views the application can change), or undefined.
   */
  get(storedType: string, sealed: Buffer, place: Buffer): Buffer | undefined {
    if (this.maxEntries === 0 || sealed.length < TAG_BYTES) return undefined;
    const slot = this.byKey.get(tagKey(sealed));
    const type = this.typeIds.get(storedType);
    if (slot === undefined || type === undefined || !this.holds(slot, type, sealed, place)) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    const at = slot * FIELDS;
    this.slots[at + USED] = 1;
    const from = this.slots[at + START] + sealed.length + place.length;
    const plain = Buffer.allocUnsafe(this.slots[at + PLAIN_LENGTH]);
    (this.chunks[this.slots[at + CHUNK]] as Buffer).copy(plain, 0, from, from + plain.length);
    return plain;
  }

  /** Whether the entry in `slot` is `sealed` of stored type number `type` at `place`, byte for byte. */
  private holds(slot: number, type: number, sealed: Buffer, place: Buffer): boolean {
    const at = slot * FIELDS;
    const s = this.slots;
    if (s[at + TYPE] !== type || s[at + SEALED_LENGTH] !== sealed.length || s[at + PLACE_LENGTH] !== place.length) {
      return false;
    }
    const chunk = this.chunks[s[at + CHUNK]] as Buffer;
    const start = s[at + START];
    const placeStart = start + sealed.length;
    return (
      chunk.compare(sealed, 0, sealed.length, start, placeStart) === 0 &&
      chunk.compare(place, 0, place.length, placeStart, placeStart + place.length) === 0
    );
  }

  /** The number of a stored type, numbered on first use; undefined once MAX_TYPES are. */
  private typeId(storedType: string): number | undefined {
    const known = this.typeIds.get(storedType);
    if (known !== undefined || this.typeIds.size >= MAX_TYPES) return known;
    this.typeIds.set(storedType, this.typeIds.size);
    return this.typeIds.size - 1;
  }

  /**
   * Remembers that `sealed` (of stored type `storedType`) opens to `plain` at `place` (its
   * parts as the associated data holds them); the bytes are copied.
   */
  remember(storedType: string, sealed: Uint8Array, place: Uint8Array, plain: Uint8Array): void {
    const size = sealed.length + place.length + plain.length;
    const type = this.typeId(storedType);
    if (this.maxEntries === 0 || size > this.chunkBytes || sealed.length < TAG_BYTES || type === undefined) return;
    // Each pass over a chunk clears the second chances of what it keeps: within two
    // rounds of the ring every chunk has room.
    for (let passes = 0; this.offset + size > this.chunkBytes || this.byKey.size >= this.maxEntries; passes++) {
      if (passes > 2 * this.chunkCount) return;
      this.nextChunk();
    }
    this.chunks[this.current] ??= Buffer.allocUnsafeSlow(this.chunkBytes);
    const chunk = this.chunks[this.current] as Buffer;
    chunk.set(sealed, this.offset);
    chunk.set(place, this.offset + sealed.length);
    chunk.set(plain, this.offset + sealed.length + place.length);
    const key = tagKey(sealed);
    const previous = this.byKey.get(key);
    // Its bytes stay where they are until its chunk is passed over, where its slot is freed.
    if (previous !== undefined) {
      this.bytes -= this.sizeOf(previous);
      this.slots[previous * FIELDS + KEY] = -1;
    }
    const slot = this.freeSlots.pop() ?? this.slots.length / FIELDS;
    const at = slot * FIELDS;
    this.slots[at + CHUNK] = this.current;
    this.slots[at + START] = this.offset;
    this.slots[at + SEALED_LENGTH] = sealed.length;
    this.slots[at + PLACE_LENGTH] = place.length;
    this.slots[at + PLAIN_LENGTH] = plain.length;
    this.slots[at + TYPE] = type;
    this.slots[at + KEY] = key;
    this.slots[at + USED] = 0;
    this.byKey.set(key, slot);
    this.residents[this.current] ??= [];
    this.residents[this.current]?.push(slot);
    this.offset += size;
    this.bytes += size;
  }

  private sizeOf(slot: number): number {
    const at = slot * FIELDS;
    return this.slots[at + SEALED_LENGTH] + this.slots[at + PLACE_LENGTH] + this.slots[at + PLAIN_LENGTH];
  }

  /** Moves to the next chunk: drops what it held but the entries read since, which move to its front. */
  private nextChunk(): void {
    this.current = (this.current + 1) % this.chunkCount;
    const chunk = this.chunks[this.current];
    const kept: number[] = [];
    let offset = 0;
    for (const slot of this.residents[this.current] ?? []) {
      const at = slot * FIELDS;
      const key = this.slots[at + KEY];
      if (key < 0) {
        this.freeSlots.push(slot); // replaced since
        continue;
      }
      const size = this.sizeOf(slot);
      if (this.slots[at + USED] === 0 || !chunk) {
        this.byKey.delete(key);
        this.bytes -= size;
        this.freeSlots.push(slot);
        continue;
      }
      this.slots[at + USED] = 0;
      // Kept entries only move towards the front, so copying in order never overwrites one not yet moved.
      const start = this.slots[at + START];
      chunk.copyWithin(offset, start, start + size);
      this.slots[at + START] = offset;
      offset += size;
      kept.push(slot);
    }
    this.residents[this.current] = kept;
    this.offset = offset;
  }

  /** Opens served from memory and opens that ran the cipher, and what is held now. */
  stats(): { hits: number; misses: number; entries: number; bytes: number } {
    return { hits: this.hits, misses: this.misses, entries: this.byKey.size, bytes: this.bytes };
  }
}
