/**
 * The Sealer's memory of values it opened lately, by their exact sealed bytes: every read
 * of a thread re-opens the same bases of its chains, so a hit spares the cipher set-up
 * (several µs per value). The saver also remembers the channel values it seals (a thread's
 * next turn reads them back); not its pending writes, which are rarely read again. An entry
 * whose write failed matches no stored row: its nonce was fresh.
 *
 * A hit requires the same stored type, the same place and byte-identical sealed bytes, so
 * it returns exactly what opening would; anything else misses and is opened (and checked)
 * as usual. `cacheBytes: 0` turns it off.
 *
 * The bytes live in a ring of chunks (cacheBytes in all, each allocated when first
 * written), filled in turn: coming back to a chunk drops the values it held, except those
 * read since they were last passed over, which move to its front (second chance). A few
 * large allocations rather than one per value: one each cost more in allocation and
 * garbage collection than the cipher set-up a hit spares (about 3 µs per value remembered).
 */

/** What one entry is: the sealed value as stored (in its chunk) and what it opens to (right after it). */
interface OpenedValue {
  storedType: string;
  place: readonly string[];
  type: string;
  chunk: number;
  start: number;
  sealedLength: number;
  plainLength: number;
  key: number;
  /** Read since it was last passed over (second chance: a hit costs no reordering). */
  used: boolean;
}

const TAG_BYTES = 16;
/** The largest chunk; there are at least MIN_CHUNKS, so a pass drops at most an eighth of what is held. */
const MAX_CHUNK_BYTES = 1024 * 1024;
const MIN_CHUNKS = 8;
/** Per-entry bookkeeping beyond its bytes (the entry, its copy of the place, its map slot), roughly: bounds the count. */
const ENTRY_OVERHEAD = 256;

function samePlace(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * 30 bits of the GCM tag (random-looking, distinct per sealing) as a small integer: a
 * cheap map key (V8 keeps it unboxed). Two values sharing it are told apart by comparing
 * type, place and bytes; the newer one takes the slot.
 */
function tagKey(sealed: Uint8Array): number {
  const end = sealed.length - TAG_BYTES;
  return (sealed[end] | (sealed[end + 1] << 8) | (sealed[end + 2] << 16) | (sealed[end + 3] << 24)) & 0x3fffffff;
}

export class OpenedValues {
  /** By tagKey. */
  private readonly entries = new Map<number, OpenedValue>();
  private readonly chunks: Buffer[] = [];
  /** The entries written into each chunk, in the order written. */
  private readonly residents: OpenedValue[][] = [];
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

  /** The opened type and bytes (a copy: decoders may hand out views the application can change), or undefined. */
  get(storedType: string, sealed: Buffer, place: readonly string[]): [string, Buffer] | undefined {
    if (this.maxEntries === 0 || sealed.length < TAG_BYTES) return undefined;
    const entry = this.entries.get(tagKey(sealed));
    const chunk = entry && this.chunks[entry.chunk];
    if (
      !entry ||
      !chunk ||
      entry.storedType !== storedType ||
      entry.sealedLength !== sealed.length ||
      !samePlace(entry.place, place) ||
      chunk.compare(sealed, 0, sealed.length, entry.start, entry.start + entry.sealedLength) !== 0
    ) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    entry.used = true;
    const plain = Buffer.allocUnsafe(entry.plainLength);
    chunk.copy(plain, 0, entry.start + entry.sealedLength, entry.start + entry.sealedLength + entry.plainLength);
    return [entry.type, plain];
  }

  /** Remembers that `sealed` (stored type `storedType`, at `place`) opens to `type` and `plain`; all are copied. */
  remember(storedType: string, sealed: Uint8Array, place: readonly string[], type: string, plain: Uint8Array): void {
    const size = sealed.length + plain.length;
    if (this.maxEntries === 0 || size > this.chunkBytes || sealed.length < TAG_BYTES) return;
    // Each pass over a chunk clears the second chances of what it keeps: within two
    // rounds of the ring every chunk has room.
    for (let passes = 0; this.offset + size > this.chunkBytes || this.entries.size >= this.maxEntries; passes++) {
      if (passes > 2 * this.chunkCount) return;
      this.nextChunk();
    }
    this.chunks[this.current] ??= Buffer.allocUnsafeSlow(this.chunkBytes);
    const chunk = this.chunks[this.current] as Buffer;
    chunk.set(sealed, this.offset);
    chunk.set(plain, this.offset + sealed.length);
    const key = tagKey(sealed);
    const previous = this.entries.get(key);
    // Its bytes stay where they are until its chunk is passed over, where it is found replaced.
    if (previous) this.bytes -= previous.sealedLength + previous.plainLength;
    const entry: OpenedValue = {
      storedType,
      place: [...place],
      type,
      chunk: this.current,
      start: this.offset,
      sealedLength: sealed.length,
      plainLength: plain.length,
      key,
      used: false,
    };
    this.entries.set(key, entry);
    this.residents[this.current] ??= [];
    this.residents[this.current]?.push(entry);
    this.offset += size;
    this.bytes += size;
  }

  /** Moves to the next chunk: drops what it held but the entries read since, which move to its front. */
  private nextChunk(): void {
    this.current = (this.current + 1) % this.chunkCount;
    const chunk = this.chunks[this.current];
    const kept: OpenedValue[] = [];
    let offset = 0;
    for (const entry of this.residents[this.current] ?? []) {
      if (this.entries.get(entry.key) !== entry) continue; // replaced since
      const size = entry.sealedLength + entry.plainLength;
      if (!entry.used || !chunk) {
        this.entries.delete(entry.key);
        this.bytes -= size;
        continue;
      }
      entry.used = false;
      // Kept entries only move towards the front, so copying in order never overwrites one not yet moved.
      chunk.copyWithin(offset, entry.start, entry.start + size);
      entry.start = offset;
      offset += size;
      kept.push(entry);
    }
    this.residents[this.current] = kept;
    this.offset = offset;
  }

  /** Opens served from memory and opens that ran the cipher, and what is held now. */
  stats(): { hits: number; misses: number; entries: number; bytes: number } {
    return { hits: this.hits, misses: this.misses, entries: this.entries.size, bytes: this.bytes };
  }
}
