/** The options of `DrizzleStore` and of `DrizzleStore.fromUrl`, and their check (made before anything is opened). */
import { InvalidInputError } from "../../errors.js";
import { optionKeys, requireKnownNestedOptions, requireKnownOptions } from "../../known-options.js";
import { checkEncryptionOptions, type EncryptionOptions } from "../../serde/encryption-options.js";
import type { UrlDriver } from "../../wiring/connect.js";
import { checkTablesOptions, type StoreTables } from "../../wiring/registry.js";
import { MAX_TTL_MINUTES } from "./operations.js";
import { embedderOf, type StoreIndexOptions } from "./vectors.js";

/** Time to live of the store's items. */
export interface StoreTtlOptions {
  /** Minutes an item lives after its put when the put names no `ttl`; none: items never expire. */
  defaultTtl?: number;
  /** Whether get and search renew the ttl of the items they return (default true); a call can override it. */
  refreshOnRead?: boolean;
  /** Minutes between the passes of the sweeper that `start()` runs (default 60). */
  sweepIntervalMinutes?: number;
}

export interface DrizzleStoreOptions {
  /**
   * Tables the application defined itself with `storeTables()` from
   * "langgraph-checkpoint-drizzle/pg" (or /mysql, /sqlite) and migrates with its own
   * drizzle-kit. `setup()` then does nothing.
   */
  tables?: StoreTables;
  /** PostgreSQL only: the schema of the tables, created by `setup()` if missing (as for `DrizzleSaver`). */
  schema?: string;
  /** Table recording our applied migrations; default "langgraph_checkpoint_migrations", shared with the saver. */
  migrationsTable?: string;
  /** PostgreSQL schema of that table; default `schema`, else the current schema. */
  migrationsSchema?: string;
  ttl?: StoreTtlOptions;
  /**
   * Semantic search: `{ dims, embeddings, fields }`. Puts embed the texts at `fields`
   * (default the whole value); a search with a `query` ranks by cosine similarity.
   */
  index?: StoreIndexOptions;
  /**
   * The clock of `createdAt`, `updatedAt` and expiry, in epoch milliseconds; `Date.now` by
   * default. Processes sharing a store should have synchronised clocks.
   */
  clock?: () => number;
  /**
   * Encryption at rest, as the saver's option: `{ keys, activeKeyId, allowPlaintext? }`.
   * Every item's value and embeddings are sealed for its namespace and key; filters then
   * run in the process over the items under the search's prefix (docs/encryption.md).
   */
  encryption?: EncryptionOptions;
}

export interface StoreFromUrlOptions extends DrizzleStoreOptions {
  /** The driver to open the URL with; by default the first installed one that serves its scheme. */
  driver?: UrlDriver;
}

const TTL_OPTION_KEYS = optionKeys<StoreTtlOptions>({
  defaultTtl: true,
  refreshOnRead: true,
  sweepIntervalMinutes: true,
});

const STORE_OPTION_KEYS = optionKeys<DrizzleStoreOptions>({
  tables: true,
  schema: true,
  migrationsTable: true,
  migrationsSchema: true,
  ttl: true,
  index: true,
  clock: true,
  encryption: true,
});
const FROM_URL_OPTION_KEYS = [
  ...STORE_OPTION_KEYS,
  ...optionKeys<Omit<StoreFromUrlOptions, keyof DrizzleStoreOptions>>({ driver: true }),
];

/**
 * Checks the options of `new DrizzleStore` (`call` "DrizzleStore") or of `fromUrl`, whole:
 * an unknown key, at the top or inside `ttl`, `index` (and `index.native`) or `encryption`,
 * or a value of the wrong type is an InvalidInputError naming it. Needs no database, so
 * `fromUrl` calls it before it connects.
 */
export function checkStoreOptions(options: unknown, call: "DrizzleStore" | "DrizzleStore.fromUrl"): void {
  requireKnownOptions(options, call, call === "DrizzleStore" ? STORE_OPTION_KEYS : FROM_URL_OPTION_KEYS);
  const { ttl, index, clock, encryption } = options as DrizzleStoreOptions;
  checkTablesOptions(options, "storeTables()");
  checkTtlOptions(ttl);
  embedderOf(index);
  if (clock !== undefined && typeof clock !== "function") {
    throw new InvalidInputError("clock must be a function returning epoch milliseconds");
  }
  if (encryption !== undefined) checkEncryptionOptions(encryption);
  if (encryption !== undefined && index?.native) {
    // The index's side table would hold the vectors, which leak what the sealed items say.
    throw new InvalidInputError(
      "index.native cannot be used with encryption: a native vector index keeps the vectors in the clear; with encryption the search is the exact one, over the opened items",
    );
  }
}

/** The `ttl` option checked (known keys, positive minutes, a boolean refreshOnRead) and copied. */
export function checkTtlOptions(ttl: StoreTtlOptions | undefined): StoreTtlOptions {
  if (ttl === undefined) return {};
  requireKnownNestedOptions(ttl as unknown, "ttl", TTL_OPTION_KEYS);
  const positive = (value: unknown, what: string) => {
    if (value !== undefined && (typeof value !== "number" || !Number.isFinite(value) || value <= 0)) {
      throw new InvalidInputError(`ttl.${what} must be a positive number of minutes, got ${String(value)}`);
    }
  };
  positive(ttl.defaultTtl, "defaultTtl");
  if (ttl.defaultTtl !== undefined && ttl.defaultTtl > MAX_TTL_MINUTES) {
    throw new InvalidInputError(`ttl.defaultTtl must be at most ${MAX_TTL_MINUTES} minutes, got ${ttl.defaultTtl}`);
  }
  positive(ttl.sweepIntervalMinutes, "sweepIntervalMinutes");
  if (ttl.refreshOnRead !== undefined && typeof ttl.refreshOnRead !== "boolean") {
    throw new InvalidInputError("ttl.refreshOnRead must be a boolean");
  }
  return { ...ttl };
}
