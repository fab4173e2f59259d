/**
 * The `encryption` option of the saver, the store and the transfer functions: its keys,
 * and the check of the whole option, made before anything is opened (`fromUrl` makes it
 * before it connects; `Sealer` before it seals anything).
 */
import { InvalidInputError } from "../errors.js";
import { optionKeys, requireKnownNestedOptions } from "../known-options.js";

/** The longest key id: a sealed type must fit MySQL's 64-character type column. */
const MAX_KEY_ID_LENGTH = 16;
const KEY_ID = /^[A-Za-z0-9_-]{1,16}$/;
const KEY_BYTES = 32;
const DEFAULT_CACHE_BYTES = 16 * 1024 * 1024;

/** The `encryption` option: keys by id (32 bytes, or their base64), the one new values are sealed with. */
export interface EncryptionOptions {
  keys: Record<string, Uint8Array | string>;
  activeKeyId: string;
  /**
   * Migration mode, temporary: read rows stored in the clear (written before encryption
   * was turned on) instead of refusing them. New values are sealed all the same.
   */
  allowPlaintext?: boolean;
  /**
   * Bytes of recently opened or written channel values kept in process memory (sealed and
   * plain), so a value read again (a chain's bases on every read of its thread, the values a
   * turn wrote on the thread's next turn) skips the cipher. Default 16 MiB; 0 keeps no
   * plaintext beyond the call that needs it.
   */
  cacheBytes?: number;
}

const ENCRYPTION_OPTION_KEYS = optionKeys<EncryptionOptions>({
  keys: true,
  activeKeyId: true,
  allowPlaintext: true,
  cacheBytes: true,
});

/** The `encryption` option checked, its keys as bytes and its defaults applied. */
export interface CheckedEncryption {
  keys: Map<string, Buffer>;
  activeKeyId: string;
  allowPlaintext: boolean;
  cacheBytes: number;
}

/** A key given as bytes or base64 text, checked to be 32 bytes. */
function keyBytes(keyId: string, key: Uint8Array | string): Buffer {
  if (typeof key !== "string" && !(key instanceof Uint8Array)) {
    throw new InvalidInputError(`encryption: key "${keyId}" must be a Buffer, a Uint8Array or base64 text`);
  }
  const bytes = typeof key === "string" ? Buffer.from(key, "base64") : Buffer.from(key);
  if (typeof key === "string" && bytes.toString("base64").replace(/=+$/, "") !== key.trim().replace(/=+$/, "")) {
    throw new InvalidInputError(`encryption: key "${keyId}" is not valid base64`);
  }
  if (bytes.length !== KEY_BYTES) {
    throw new InvalidInputError(`encryption: key "${keyId}" must be ${KEY_BYTES} bytes, got ${bytes.length}`);
  }
  return bytes;
}

/**
 * A key id as an error message may show it: quoted when it is short enough to be one,
 * else only its length. An id that long is often a key given in the id's place ("base64:id"
 * for "id:base64"), and keys never reach a message.
 */
export function describeKeyId(keyId: unknown): string {
  const text = String(keyId);
  return text.length <= MAX_KEY_ID_LENGTH
    ? JSON.stringify(text)
    : `of ${text.length} characters (not shown: it may be a key)`;
}

/**
 * The whole `encryption` option checked: an unknown key (a misspelt `activeKeyId` or
 * `allowPlaintext`) or a value of the wrong type is an InvalidInputError, never dropped.
 */
export function checkEncryptionOptions(options: EncryptionOptions): CheckedEncryption {
  if (typeof options !== "object" || options === null || typeof options.keys !== "object" || !options.keys) {
    throw new InvalidInputError("encryption: { keys, activeKeyId } is required");
  }
  requireKnownNestedOptions(options, "encryption", ENCRYPTION_OPTION_KEYS);
  const keys = new Map<string, Buffer>();
  for (const [keyId, key] of Object.entries(options.keys)) {
    if (!KEY_ID.test(keyId)) {
      throw new InvalidInputError(
        `encryption: key id ${describeKeyId(keyId)} must be 1 to 16 of A-Z, a-z, 0-9, "_" and "-"`,
      );
    }
    keys.set(keyId, keyBytes(keyId, key));
  }
  if (!keys.has(options.activeKeyId)) {
    throw new InvalidInputError(`encryption: activeKeyId ${describeKeyId(options.activeKeyId)} is not among the keys`);
  }
  const { allowPlaintext = false, cacheBytes = DEFAULT_CACHE_BYTES } = options;
  if (typeof allowPlaintext !== "boolean") {
    throw new InvalidInputError("encryption: allowPlaintext must be true or false");
  }
  if (!Number.isSafeInteger(cacheBytes) || cacheBytes < 0) {
    throw new InvalidInputError("encryption: cacheBytes must be a whole number of bytes, 0 or more");
  }
  return { keys, activeKeyId: options.activeKeyId, allowPlaintext, cacheBytes };
}
