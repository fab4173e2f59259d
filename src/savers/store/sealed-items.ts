/**
 * Encryption at rest for the store's items: a put's value and embeddings sealed together
 * (serde/sealing.ts, the saver's Sealer) for the item's place, and opened again on read.
 *
 * A sealed item keeps the existing columns: its value column holds one JSON string,
 * `enc1.<keyId>:store-item/json+f32:<base64 of nonce | ciphertext | tag>`, and its
 * embeddings column is null (the vectors are inside the sealed bytes). A plaintext value
 * is always a JSON object (puts refuse anything else), so the two forms can never be
 * taken for one another.
 */
import { DecryptionError } from "../../errors.js";
import { isSealedType, type Place, type Sealer } from "../../serde/sealing.js";
import type { Row } from "../../sql/executor.js";
import { type FilterCondition, matchesFilter, parseFilter } from "./filters.js";
import { decodePath } from "./namespaces.js";
import { itemOf, textOf } from "./statements.js";

/**
 * The serializer type inside a sealed item: the value's JSON, then its float32 vectors.
 * At least 16 characters, so the first 24 characters of a sealed value's JSON text name
 * its key id and nothing else (status groups by them).
 */
const STORE_ITEM_TYPE = "store-item/json+f32";

/** An item's place: a kind no checkpoint value has, the namespace path, the key. */
function itemPlace(path: string, key: string): Place {
  return ["store", path, key];
}

/** How a message names an item. */
function describeItem(path: string, key: string): string {
  return `the store item ${JSON.stringify(key)} in namespace ${JSON.stringify(decodePath(path))}`;
}

/**
 * The sealed text of a value column as a driver returns it (JSON text, or JSON parsed
 * into a string by mysql2); undefined for a plaintext value (a JSON object).
 */
function sealedText(value: unknown): string | undefined {
  if (value instanceof Uint8Array) return sealedText(textOf(value));
  if (typeof value !== "string") return undefined;
  if (isSealedType(value)) return value;
  if (!value.startsWith('"')) return undefined;
  const parsed: unknown = JSON.parse(value);
  return typeof parsed === "string" && isSealedType(parsed) ? parsed : undefined;
}

/** The value column's JSON text of a sealed item. */
export function sealItem(sealer: Sealer, path: string, key: string, json: string, embeddings: Buffer | null): string {
  const value = Buffer.from(json, "utf8");
  const payload = Buffer.allocUnsafe(4 + value.length + (embeddings?.length ?? 0));
  payload.writeUInt32BE(value.length, 0);
  value.copy(payload, 4);
  embeddings?.copy(payload, 4 + value.length);
  const [type, bytes] = sealer.seal(STORE_ITEM_TYPE, payload, itemPlace(path, key));
  return JSON.stringify(`${type}:${bytes.toString("base64")}`);
}

/**
 * Opens a sealed text for its place: the value's JSON and its embeddings (null without).
 * A plaintext row is passed as it is only when `allowPlaintext`.
 */
export function openItem(
  sealer: Sealer,
  row: { path: string; key: string; value: unknown; embeddings?: unknown },
  allowPlaintext = sealer.allowPlaintext,
): { json: string | undefined; embeddings: Buffer | null } {
  const where = describeItem(row.path, row.key);
  const place = itemPlace(row.path, row.key);
  const text = sealedText(row.value);
  if (text === undefined) {
    // Sealer.open refuses a plaintext type unless allowed, with the message every value has.
    sealer.open("json", new Uint8Array(0), place, where, allowPlaintext);
    const embeddings = row.embeddings instanceof Uint8Array ? Buffer.from(row.embeddings) : null;
    return { json: undefined, embeddings };
  }
  const colon = text.lastIndexOf(":");
  const [type, payload] = sealer.open(text.slice(0, colon), Buffer.from(text.slice(colon + 1), "base64"), place, where);
  if (type !== STORE_ITEM_TYPE) throw new DecryptionError(`${where} holds an unknown sealed type "${type}"`);
  const bytes = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  const length = bytes.readUInt32BE(0);
  const vectors = bytes.subarray(4 + length);
  return {
    json: bytes.subarray(4, 4 + length).toString("utf8"),
    embeddings: vectors.length === 0 ? null : Buffer.from(vectors),
  };
}

/** Seals what the store writes and opens what it reads when it has keys; refuses sealed rows when it has none. */
export class ItemSealing {
  constructor(readonly sealer: Sealer | undefined) {}

  /** The value column's JSON text for a put (sealed or as it is) and the embeddings column. */
  seal(path: string, key: string, json: string, embeddings: Buffer | null): [string, Buffer | null] {
    return this.sealer ? [sealItem(this.sealer, path, key, json, embeddings), null] : [json, embeddings];
  }

  /** A read row (ns_path, item_key, value, embeddings?) with its value and embeddings opened. */
  open(row: Row): Row {
    const path = textOf(row.ns_path);
    const key = textOf(row.item_key);
    if (!this.sealer) {
      if (sealedText(row.value) !== undefined) {
        throw new DecryptionError(
          `${describeItem(path, key)} is sealed and this store has no encryption option; give it the keys`,
        );
      }
      return row;
    }
    const opened = openItem(this.sealer, { path, key, value: row.value, embeddings: row.embeddings });
    return opened.json === undefined ? row : { ...row, value: opened.json, embeddings: opened.embeddings };
  }

  /**
   * The rows (every item under a search's prefix, in the statement's order) opened, and
   * those whose value satisfies `filter`: what SQL does for values it can read. Any row
   * that fails to open fails the whole search.
   */
  openMatching(rows: Row[], filter: unknown): Row[] {
    const conditions: FilterCondition[] = parseFilter(filter);
    const opened = rows.map((row) => this.open(row));
    if (conditions.length === 0) return opened;
    return opened.filter((row) => matchesFilter(conditions, itemOf(row).value));
  }
}
