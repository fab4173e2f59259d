/**
 * The Sealer's memory of values it opened lately, by their exact sealed bytes: every read
 * of a thread re-opens the same bases of its chains, so a hit spares the cipher set-up
 * (several µs per value). Values are not remembered when sealed: measured, copying every
 * write into memory cost the write path more than the reads it spared.
 *
 * A hit requires the same stored type, the same place and byte-identical sealed bytes, so
 * it returns exactly what opening would; anything else misses and is opened (and checked)
 * as usual. Bounded in bytes, oldest out first unless read since (second chance);
 * `cacheBytes: 0` turns it off.
 */

/** What one entry holds: the sealed value as stored and what it opens to. */
interface OpenedValue {
  storedType: string;
  place: readonly string[];
  sealed: Buffer;
  type: string;
  plain: Buffer;
  size: number;
  key: number;
  /** Read since it was last passed over for eviction (second chance: a hit costs no reordering). */
  used: boolean;
}

/** Per-entry bookkeeping beyond the two byte arrays (strings, the map's slot), roughly. */
const ENTRY_OVERHEAD = 256;
const TAG_BYTES = 16;

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
function tagKey(sealed: Buffer): number {
  return sealed.readUInt32LE(sealed.length - TAG_BYTES) & 0x3fffffff;
}

export class OpenedValues {
  /** By tagKey. */
  private readonly entries = new Map<number, OpenedValue>();
  /**
   * Eviction order, oldest from `head` on: its own queue, since taking the first entry of a
   * Map that keeps losing its first entries walks over their tombstones each time.
   */
  private order: (OpenedValue | undefined)[] = [];
  private head = 0;
  private bytes = 0;
  private hits = 0;
  private misses = 0;

  constructor(private readonly maxBytes: number) {}

  /** The opened type and bytes (a copy: decoders may hand out views the application can change), or undefined. */
  get(storedType: string, sealed: Buffer, place: readonly string[]): [string, Buffer] | undefined {
    if (this.maxBytes === 0 || sealed.length < TAG_BYTES) return undefined;
    const entry = this.entries.get(tagKey(sealed));
    if (!entry || entry.storedType !== storedType || !samePlace(entry.place, place) || !entry.sealed.equals(sealed)) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    entry.used = true;
    return [entry.type, Buffer.from(entry.plain)];
  }

  /** Remembers that `sealed` (stored type `storedType`, at `place`) opens to `type` and `plain`; both are copied. */
  remember(storedType: string, sealed: Uint8Array, place: readonly string[], type: string, plain: Uint8Array): void {
    const size = sealed.length + plain.length + ENTRY_OVERHEAD;
    if (size > this.maxBytes / 8 || sealed.length < TAG_BYTES) return;
    // Both copies in one allocation of their own: a pooled Buffer (under 4 KiB) keeps its
    // whole 8 KiB pool slab alive as long as the entry, and the memory held was about 3x
    // cacheBytes.
    const copies = Buffer.allocUnsafeSlow(sealed.length + plain.length);
    copies.set(sealed, 0);
    copies.set(plain, sealed.length);
    const copy = copies.subarray(0, sealed.length);
    const key = tagKey(copy);
    const previous = this.entries.get(key);
    if (previous) this.bytes -= previous.size; // its place in the queue is skipped when reached
    const entry = {
      storedType,
      place: [...place],
      sealed: copy,
      type,
      plain: copies.subarray(sealed.length),
      size,
      key,
      used: false,
    };
    this.entries.set(key, entry);
    this.order.push(entry);
    this.bytes += size;
    this.evict();
  }

  /** Drops the oldest entries until within the bound; one read since it was last considered goes to the back. */
  private evict(): void {
    while (this.bytes > this.maxBytes) {
      const oldest = this.order[this.head] as OpenedValue;
      // Taken out of the queue, so that an evicted entry's bytes are not kept until compaction.
      this.order[this.head++] = undefined;
      if (this.entries.get(oldest.key) !== oldest) continue; // replaced since
      if (oldest.used) {
        oldest.used = false;
        this.order.push(oldest);
        continue;
      }
      this.entries.delete(oldest.key);
      this.bytes -= oldest.size;
    }
    if (this.head > 1024 && this.head * 2 > this.order.length) {
      this.order = this.order.slice(this.head);
      this.head = 0;
    }
  }

  /** Opens served from memory and opens that ran the cipher, and what is held now. */
  stats(): { hits: number; misses: number; entries: number; bytes: number } {
    return { hits: this.hits, misses: this.misses, entries: this.entries.size, bytes: this.bytes };
  }
}
