/**
 * The package's entry point: the saver and the store, their options and result types, the errors, the
 * serializer and the transfer functions.
 */
export type { TableStats } from "./dialects/dialect.js";
export {
  CheckpointSaverError,
  DecryptionError,
  DriverNotInstalledError,
  ExistingTablesError,
  FileReadError,
  InvalidInputError,
  InvalidNamespaceError,
  LineTooLongError,
  MigrationError,
  type MigrationInfo,
  MissingKeyError,
  MissingPackageError,
  MissingParentError,
  SaverClosedError,
  SerializationError,
  ThreadChangedError,
  ThreadConflictError,
  UnsupportedDriverError,
  VectorIndexError,
  WriteConflictError,
} from "./errors.js";
export {
  type CountThreadsOptions,
  DrizzleSaver,
  type DrizzleSaverOptions,
  type EncryptionStatus,
  type FromUrlOptions,
  type MigrationStatus,
  type RekeyOptions,
  type RekeyProgress,
  type SearchThreadsOptions,
  type ThreadInfo,
  type ThreadSummary,
} from "./savers/saver.js";
export { STORE_FILTER_LIMITS } from "./savers/store/filters.js";
export type { StoreNativeIndex, StoreNativeIndexOptions } from "./savers/store/native-index/options.js";
export {
  DrizzleStore,
  type DrizzleStoreOptions,
  type EmbedFunction,
  type StoreEncryptionStatus,
  type StoreFromUrlOptions,
  type StoreIndexOptions,
  type StoreRekeyOptions,
  type StoreTtlOptions,
} from "./savers/store/store.js";
export type { ExpireThreadsOptions, PruneStrategy } from "./savers/threads/lifecycle.js";
export type {
  RetentionPolicy,
  RetentionStrategy,
  SweeperHandle,
  SweeperOptions,
  SweepOptions,
  SweepOutcome,
  SweepProgress,
  SweepResult,
} from "./savers/threads/retention.js";
export type { SortOrder, ThreadSortKey } from "./savers/threads/thread-search.js";
export { FILTER_LIMITS } from "./savers/values/metadata.js";
export { MAX_NESTING_DEPTH } from "./serde/bounds.js";
export type { EncryptionOptions } from "./serde/encryption-options.js";
export { MsgpackSerializer } from "./serde/msgpack.js";
export { type Place, Sealer } from "./serde/sealing.js";
export type { SpiderOptions } from "./spider/migrations.js";
export * from "./transfer/index.js";
export type { UrlDriver } from "./wiring/connect.js";
export type { CheckpointTables, StoreTables, SupportedDatabase } from "./wiring/registry.js";
