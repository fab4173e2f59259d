export type { TableStats } from "./dialects/dialect.js";
export type { CheckpointTables, SupportedDatabase } from "./drivers/registry.js";
export {
  CheckpointSaverError,
  ExistingTablesError,
  InvalidInputError,
  MigrationError,
  type MigrationInfo,
  MissingParentError,
  SerializationError,
  UnsupportedDriverError,
} from "./errors.js";
export type { ExpireThreadsOptions, PruneStrategy } from "./saver/lifecycle.js";
export { DrizzleSaver, type DrizzleSaverOptions, type ThreadSummary } from "./saver/saver.js";
export { MsgpackSerializer } from "./serde/msgpack.js";
export type { SpiderOptions } from "./spider/migrations.js";
export * from "./transfer/index.js";
