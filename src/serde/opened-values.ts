/**
 * The Sealer's memory of values it sealed or opened lately, by their exact sealed bytes:
 * a thread's next read opens the values its last put sealed, and every read of a chain
 * re-opens the same bases, so a hit spares the cipher set-up (several µs per value).
 *
 * A hit requires the same stored type, the same place and byte-identical sealed bytes, so
 * it returns exactly what opening would; anything else misses and is opened (and checked)
 * as usual. Bounded in bytes, least recently used first out; `cacheBytes: 0` turns it off.
 */

/** What one entry holds: the sealed value as stored and what it opens to. */
interface OpenedValue {
  storedType: string;
  place: readonly string[];
  sealed: Buffer;
  type: string;
  plain: Buffer;
  size: number;
}

/** Per-entry bookkeeping beyond the two byte arrays (strings, the map's slot), roughly. */
const ENTRY_OVERHEAD = 256;
const TAG_BYTES = 16;

function samePlace(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export class OpenedValues {
  /** By the GCM tag (random-looking and distinct per sealing); a Map keeps insertion order, the LRU order. */
  private readonly entries = new Map<string, OpenedValue>();
  private bytes = 0;
  private hits = 0;
  private misses = 0;

  constructor(private readonly maxBytes: number) {}

  /** The opened type and bytes (a copy: decoders may hand out views the application can change), or undefined. */
  get(storedType: string, sealed: Buffer, place: readonly string[]): [string, Buffer] | undefined {
    if (this.maxBytes === 0 || sealed.length < TAG_BYTES) return undefined;
    const tag = sealed.toString("latin1", sealed.length - TAG_BYTES);
    const entry = this.entries.get(tag);
    if (!entry || entry.storedType !== storedType || !samePlace(entry.place, place) || !entry.sealed.equals(sealed)) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    this.entries.delete(tag);
    this.entries.set(tag, entry);
    return [entry.type, Buffer.from(entry.plain)];
  }

  /** Remembers that `sealed` (stored type `storedType`, at `place`) opens to `type` and `plain`; both are copied. */
  remember(storedType: string, sealed: Uint8Array, place: readonly string[], type: string, plain: Uint8Array): void {
    const size = sealed.length + plain.length + ENTRY_OVERHEAD;
    if (size > this.maxBytes / 8 || sealed.length < TAG_BYTES) return;
    const copy = Buffer.from(sealed);
    const tag = copy.toString("latin1", copy.length - TAG_BYTES);
    const previous = this.entries.get(tag);
    if (previous) {
      this.entries.delete(tag);
      this.bytes -= previous.size;
    }
    this.entries.set(tag, { storedType, place: [...place], sealed: copy, type, plain: Buffer.from(plain), size });
    this.bytes += size;
    for (const [oldest, entry] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= entry.size;
    }
  }

  /** Opens served from memory and opens that ran the cipher, and what is held now. */
  stats(): { hits: number; misses: number; entries: number; bytes: number } {
    return { hits: this.hits, misses: this.misses, entries: this.entries.size, bytes: this.bytes };
  }
}
