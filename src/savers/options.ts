/**
 * The options of `DrizzleSaver` and of `DrizzleSaver.fromUrl`, their check (made before
 * anything is opened), and the rule of the calls' batch sizes.
 */
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { describeValue, InvalidInputError } from "../errors.js";
import { optionKeys, requireKnownOptions } from "../known-options.js";
import { checkEncryptionOptions, type EncryptionOptions } from "../serde/encryption-options.js";
import { checkSpiderOptions, type SpiderOptions } from "../spider/migrations.js";
import type { UrlDriver } from "../wiring/connect.js";
import { type CheckpointTables, checkTablesOptions } from "../wiring/registry.js";
import { type RetentionPolicy, resolvePolicy } from "./threads/retention.js";

/** The options of {@link DrizzleSaver} (saver.ts). */
export interface DrizzleSaverOptions {
  /** Serializer for checkpoints, channel values and writes; MessagePack by default. */
  serde?: SerializerProtocol;
  /**
   * Tables the application defined itself with `checkpointTables()` from
   * "langgraph-checkpoint-drizzle/pg" (or /mysql, /sqlite) and migrates with its own
   * drizzle-kit. `setup()` then does nothing.
   */
  tables?: CheckpointTables;
  /**
   * PostgreSQL only: the schema of the saver's tables, created by `setup()` if missing.
   * Every statement names it, so the connection's search_path does not matter. By
   * default the tables are where search_path puts them (the current schema).
   */
  schema?: string;
  /** Table recording our applied migrations; default "langgraph_checkpoint_migrations". */
  migrationsTable?: string;
  /** PostgreSQL schema of that table; default `schema`, else the current schema (first of search_path). */
  migrationsSchema?: string;
  /**
   * MariaDB Spider: `db` is the Spider head and these are its data nodes; `setup()`
   * migrates every node and builds the head's Spider tables (docs/sharding.md).
   */
  spider?: SpiderOptions;
  /**
   * Channel values this saver remembers (per thread, namespace and channel) to store an
   * array that extends one of them as its appended elements only; 0 stores every
   * value whole. Default 1000. Elements are compared by content, not identity: each must
   * still hold what it held when stored or read (values/snapshots.ts), so an element
   * changed in place makes the array stored whole and the change is kept.
   */
  incrementalValues?: number;
  /**
   * What `sweep()` and `startSweeper()` do to idle threads: `{ idleFor: "30d", strategy:
   * "delete" }` removes every thread with no checkpoint (in any namespace) for 30 days;
   * `strategy: "keep_latest", keepLast: n` keeps its newest n checkpoints of each
   * namespace. Pinned threads are never touched. Nothing runs until one of them is called.
   */
  retention?: RetentionPolicy;
  /**
   * Encryption at rest (docs/encryption.md): every channel value, pending write and
   * incremental value is sealed with AES-256-GCM under `keys[activeKeyId]`, bound to its
   * thread, namespace, channel or task and version or checkpoint. Keys are 32 bytes (or
   * their base64); older keys stay for reading until `rekey` has re-sealed their values.
   * Metadata stays in the clear, so filters keep working.
   */
  encryption?: EncryptionOptions;
  /**
   * Metadata keys never stored (metadata stays in the clear, also with `encryption`, so
   * filters work in SQL): `put` drops them, and they are not returned or filterable.
   */
  excludeMetadataKeys?: string[];
  /**
   * better-sqlite3 files in WAL mode: under sustained writes, a worker thread with its own
   * connection runs SQLite's WAL checkpoints, which otherwise run on the writing thread
   * (docs/drivers.md). Default true; false keeps them on the writing thread.
   */
  backgroundCheckpoints?: boolean;
}

/** See {@link DrizzleSaverOptions.incrementalValues}. */
export const DEFAULT_INCREMENTAL_VALUES = 1000;

export interface FromUrlOptions extends DrizzleSaverOptions {
  /** The driver to open the URL with; by default the first installed one that serves its scheme. */
  driver?: UrlDriver;
}

const SAVER_OPTION_KEYS = optionKeys<DrizzleSaverOptions>({
  serde: true,
  tables: true,
  schema: true,
  migrationsTable: true,
  migrationsSchema: true,
  spider: true,
  incrementalValues: true,
  retention: true,
  encryption: true,
  excludeMetadataKeys: true,
  backgroundCheckpoints: true,
});
const FROM_URL_OPTION_KEYS = [
  ...SAVER_OPTION_KEYS,
  ...optionKeys<Omit<FromUrlOptions, keyof DrizzleSaverOptions>>({ driver: true }),
];

/**
 * Checks the options of `new DrizzleSaver` (`call` "DrizzleSaver") or of `fromUrl`, whole:
 * an unknown key, at the top or inside `encryption`, `retention` or `spider`, or a value of
 * the wrong type is an InvalidInputError naming it. Needs no database, so `fromUrl` calls it
 * before it connects; what depends on the database (`schema` on PostgreSQL only, `tables`
 * of its family) is checked by the constructor.
 */
export function checkSaverOptions(options: unknown, call: "DrizzleSaver" | "DrizzleSaver.fromUrl"): void {
  requireKnownOptions(options, call, call === "DrizzleSaver" ? SAVER_OPTION_KEYS : FROM_URL_OPTION_KEYS);
  const { serde, incrementalValues, retention, encryption, spider } = options as DrizzleSaverOptions;
  if (serde !== undefined && !isSerializer(serde)) {
    throw new InvalidInputError(`serde must be a serializer (dumpsTyped and loadsTyped), got ${describeValue(serde)}`);
  }
  checkTablesOptions(options, "checkpointTables()");
  if (spider !== undefined) checkSpiderOptions(spider);
  if (incrementalValues !== undefined && (!Number.isSafeInteger(incrementalValues) || incrementalValues < 0)) {
    throw new InvalidInputError(`incrementalValues must be a non-negative integer, got ${String(incrementalValues)}`);
  }
  if (retention !== undefined) resolvePolicy(retention, "retention");
  if (encryption !== undefined) checkEncryptionOptions(encryption);
  const { excludeMetadataKeys = [], backgroundCheckpoints } = options as DrizzleSaverOptions;
  if (!Array.isArray(excludeMetadataKeys) || excludeMetadataKeys.some((key) => typeof key !== "string")) {
    throw new InvalidInputError("excludeMetadataKeys must be an array of strings");
  }
  if (backgroundCheckpoints !== undefined && typeof backgroundCheckpoints !== "boolean") {
    throw new InvalidInputError("backgroundCheckpoints must be true or false");
  }
}

function isSerializer(serde: unknown): serde is SerializerProtocol {
  const candidate = serde as Partial<SerializerProtocol> | null;
  return (
    typeof candidate === "object" &&
    candidate !== null &&
    typeof candidate.dumpsTyped === "function" &&
    typeof candidate.loadsTyped === "function"
  );
}

/**
 * A call's `batchSize` (sweep, rekey), `fallback` when not given. It becomes a LIMIT: 0
 * would read nothing and end the call as if it were done, so it must be a positive integer.
 */
export function batchSizeOf(batchSize: number | undefined, fallback: number, call: string): number {
  const size = batchSize ?? fallback;
  if (!Number.isSafeInteger(size) || size < 1) {
    throw new InvalidInputError(`${call}: batchSize must be a positive integer, got ${String(size)}`);
  }
  return size;
}
