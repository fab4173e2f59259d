/**
 * Encryption at rest: seals the bytes a serializer produced with AES-256-GCM (node:crypto),
 * bound to the place the value belongs (its associated data), and opens them again. Used
 * by the saver for channel values, pending writes and incremental values; the store can
 * use it the same way with its own places.
 *
 * A sealed value's stored type is `enc1.<keyId>:<type>` (the key id in the clear, so a
 * reader picks the key and `status` counts values per key in SQL), its bytes are
 * `nonce (12) | ciphertext | tag (16)`. The associated data is the format name, the key
 * id, the inner type and the place's parts, each length-prefixed: a ciphertext moved to
 * another place, given another type or another key id fails to open.
 */
import { createCipheriv, createDecipheriv, createSecretKey, type KeyObject, randomFillSync } from "node:crypto";
import { DecryptionError, InvalidInputError, MissingKeyError } from "../errors.js";
import { checkEncryptionOptions, type EncryptionOptions } from "./encryption-options.js";
import { OpenedValues } from "./opened-values.js";

/** The prefix of a sealed value's stored type; the version is part of it so a later format can coexist. */
export const SEALED_TYPE_PREFIX = "enc1.";
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
/** The type column's width on MySQL (varchar(64)); the same limit everywhere. */
const MAX_TYPE_LENGTH = 64;
const FORMAT = "langgraph-checkpoint-drizzle/enc1";

/**
 * Where a value belongs, as the strings that name it (e.g. kind, thread, namespace,
 * channel, version). Two places with different parts never share associated data.
 */
export type Place = readonly string[];

/** The associated data with UTF-8 parts of any text: each part's byte length, then its bytes. */
function associatedDataUtf8(parts: readonly string[]): Buffer {
  let size = 0;
  for (const part of parts) size += 4 + Buffer.byteLength(part, "utf8");
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const part of parts) {
    const length = out.write(part, at + 4, "utf8");
    out.writeUInt32BE(length, at);
    at += 4 + length;
  }
  return out;
}

/** The most types the memos below keep: a serializer has a handful; stored types come from rows, so bounded. */
const MAX_REMEMBERED_TYPES = 64;

/** What a sealed stored type names, and the first parts of its associated data (format, key id, inner type). */
interface SealedType {
  keyId: string;
  type: string;
  prefix: Buffer;
}

/** Sealed stored types parsed so far (undefined: a plaintext type). */
const sealedTypes = new Map<string, SealedType | undefined>();

function sealedTypeOf(storedType: string): SealedType | undefined {
  if (sealedTypes.has(storedType)) return sealedTypes.get(storedType);
  const parsed = parseSealedType(storedType);
  const known = parsed && { ...parsed, prefix: associatedDataUtf8([FORMAT, parsed.keyId, parsed.type]) };
  if (sealedTypes.size < MAX_REMEMBERED_TYPES) sealedTypes.set(storedType, known);
  return known;
}

/**
 * Where the associated data is written: setAAD reads it before returning, so one buffer
 * serves every call (an allocation per value showed in the profile of a read).
 */
let scratch = Buffer.allocUnsafeSlow(1024);

/**
 * The associated data of a value: format, key id, inner type and place, each part
 * length-prefixed (byte length, then UTF-8 bytes). This runs for every value sealed or
 * opened: ASCII place parts (the common case, where characters are bytes) are copied
 * byte by byte after the parsed prefix; any other character takes the general path.
 * Valid until the next call.
 */
function associatedData(sealed: SealedType, place: Place): Buffer {
  const { prefix } = sealed;
  let size = prefix.length;
  for (const part of place) size += 4 + part.length;
  if (size > scratch.length) scratch = Buffer.allocUnsafeSlow(Math.max(size, 2 * scratch.length));
  const out = scratch;
  prefix.copy(out, 0);
  let at = prefix.length;
  for (const part of place) {
    out.writeUInt32BE(part.length, at);
    at += 4;
    for (let i = 0; i < part.length; i++) {
      const code = part.charCodeAt(i);
      if (code > 127) return associatedDataUtf8([FORMAT, sealed.keyId, sealed.type, ...place]);
      out[at++] = code;
    }
  }
  return out.subarray(0, size);
}

/** Whether a stored type names a sealed value. */
export function isSealedType(type: string): boolean {
  return type.startsWith(SEALED_TYPE_PREFIX);
}

/** The key id and inner type of a sealed stored type; undefined for a plaintext type. */
export function parseSealedType(type: string): { keyId: string; type: string } | undefined {
  if (!isSealedType(type)) return undefined;
  const colon = type.indexOf(":", SEALED_TYPE_PREFIX.length);
  if (colon < 0) return undefined;
  return { keyId: type.slice(SEALED_TYPE_PREFIX.length, colon), type: type.slice(colon + 1) };
}

/**
 * Random nonces drawn from a pool refilled 4 KiB at a time: one randomBytes call per value
 * cost about half of a small value's sealing. Each nonce is still 12 fresh random bytes.
 */
const noncePool = { bytes: Buffer.alloc(NONCE_BYTES * 341), used: Number.POSITIVE_INFINITY };
function writeNonce(into: Buffer): void {
  if (noncePool.used + NONCE_BYTES > noncePool.bytes.length) {
    randomFillSync(noncePool.bytes);
    noncePool.used = 0;
  }
  noncePool.bytes.copy(into, 0, noncePool.used, noncePool.used + NONCE_BYTES);
  noncePool.used += NONCE_BYTES;
}

function describe(where: string | (() => string)): string {
  return typeof where === "string" ? where : where();
}

/** Seals and opens values with a set of keys; new values are sealed with the active one. */
export class Sealer {
  private readonly keys = new Map<string, KeyObject>();
  private readonly opened: OpenedValues;
  private readonly activeKey: KeyObject;
  /** Serializer type to its stored type under the active key, parsed (a serializer has a handful of types). */
  private readonly activeTypes = new Map<string, { stored: string; parsed: SealedType }>();
  readonly activeKeyId: string;
  readonly allowPlaintext: boolean;

  constructor(options: EncryptionOptions) {
    const checked = checkEncryptionOptions(options);
    for (const [keyId, bytes] of checked.keys) this.keys.set(keyId, createSecretKey(bytes));
    this.activeKeyId = checked.activeKeyId;
    this.activeKey = this.keys.get(checked.activeKeyId) as KeyObject;
    this.allowPlaintext = checked.allowPlaintext;
    this.opened = new OpenedValues(checked.cacheBytes);
  }

  /**
   * Seals `bytes` of serializer type `type` for `place` with the active key: the stored type
   * and bytes. `remember`: also keep the value in the memory of opened values, for a value
   * the process likely reads back soon (a thread's newest channel values, on its next turn).
   */
  seal(type: string, bytes: Uint8Array, place: Place, remember = false): [string, Buffer] {
    const { stored: sealedType, parsed } = this.activeTypeOf(type);
    // nonce | ciphertext | tag, written in place: GCM's ciphertext is as long as the plaintext.
    const sealed = Buffer.allocUnsafe(NONCE_BYTES + bytes.length + TAG_BYTES);
    writeNonce(sealed);
    const cipher = createCipheriv("aes-256-gcm", this.activeKey, sealed.subarray(0, NONCE_BYTES));
    const aad = associatedData(parsed, place);
    cipher.setAAD(aad);
    const body = cipher.update(bytes);
    body.copy(sealed, NONCE_BYTES);
    cipher.final().copy(sealed, NONCE_BYTES + body.length);
    cipher.getAuthTag().copy(sealed, NONCE_BYTES + bytes.length);
    if (remember) this.opened.remember(sealedType, sealed, aad.subarray(parsed.prefix.length), bytes);
    return [sealedType, sealed];
  }

  /** The stored type of a value of serializer type `type` sealed with the active key, parsed; remembered per type. */
  private activeTypeOf(type: string): { stored: string; parsed: SealedType } {
    const known = this.activeTypes.get(type);
    if (known !== undefined) return known;
    const stored = `${SEALED_TYPE_PREFIX}${this.activeKeyId}:${type}`;
    if (stored.length > MAX_TYPE_LENGTH) {
      throw new InvalidInputError(
        `encryption: the serializer's type "${type}" is too long to seal (the stored type is at most ${MAX_TYPE_LENGTH} characters)`,
      );
    }
    const active = { stored, parsed: sealedTypeOf(stored) as SealedType };
    if (this.activeTypes.size < MAX_REMEMBERED_TYPES) this.activeTypes.set(type, active);
    return active;
  }

  /**
   * Opens a stored value for `place`: the serializer's type and bytes. A plaintext type
   * passes only with allowPlaintext (rekey passes it to seal such rows); `where`
   * describes the place in errors (a function: built only when one is thrown).
   */
  open(
    storedType: string,
    bytes: Uint8Array,
    place: Place,
    where: string | (() => string),
    allowPlaintext = this.allowPlaintext,
  ): [string, Uint8Array] {
    const sealed = sealedTypeOf(storedType);
    if (!sealed) {
      if (allowPlaintext) return [storedType, bytes];
      throw new DecryptionError(
        `${describe(where)} is stored in the clear and encryption is on; refusing it (allowPlaintext: true reads such rows while migrating, and the rekey command seals them)`,
      );
    }
    const key = this.keys.get(sealed.keyId);
    if (!key) {
      throw new MissingKeyError(
        sealed.keyId,
        `${describe(where)} is sealed with key "${sealed.keyId}", which is not among the keys given`,
      );
    }
    // Not bytes (a NULL or a text put in the column by SQL) is a changed value too.
    if (!(bytes instanceof Uint8Array) || bytes.length < NONCE_BYTES + TAG_BYTES)
      throw this.tampered(where, sealed.keyId);
    const data = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    // The place as the associated data holds it: the memory compares it byte for byte.
    const aad = associatedData(sealed, place);
    const placeBytes = aad.subarray(sealed.prefix.length);
    const known = this.opened.get(storedType, data, placeBytes);
    if (known) return [sealed.type, known];
    try {
      const decipher = createDecipheriv("aes-256-gcm", key, data.subarray(0, NONCE_BYTES));
      decipher.setAAD(aad);
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      const body = decipher.update(data.subarray(NONCE_BYTES, data.length - TAG_BYTES));
      const final = decipher.final();
      const plain = final.length === 0 ? body : Buffer.concat([body, final]);
      this.opened.remember(storedType, data, placeBytes, plain);
      return [sealed.type, plain];
    } catch (error) {
      throw this.tampered(where, sealed.keyId, error);
    }
  }

  /** How the memory of opened values (`cacheBytes`) is doing: hits, misses, entries and bytes held. */
  cacheStats(): { hits: number; misses: number; entries: number; bytes: number } {
    return this.opened.stats();
  }

  /** Whether a stored type is sealed with the active key (nothing to re-seal). */
  isCurrent(storedType: string): boolean {
    return parseSealedType(storedType)?.keyId === this.activeKeyId;
  }

  /** The same failure for all three causes: GCM cannot tell them apart, so the message names each. */
  private tampered(where: string | (() => string), keyId: string, cause?: unknown): DecryptionError {
    return new DecryptionError(
      `${describe(where)} fails its integrity check: it was changed, copied from another place (thread, channel, checkpoint, store namespace or key), or sealed with other key material under the id "${keyId}"`,
      { cause },
    );
  }
}
