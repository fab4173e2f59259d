export {
  CheckpointSaverError,
  InvalidInputError,
  MigrationError,
  type MigrationInfo,
  MissingParentError,
  SerializationError,
  UnsupportedDriverError,
} from "./errors.js";
export type { CheckpointTables, SupportedDatabase } from "./savers/detect.js";
export type { TableStats } from "./savers/dialect.js";
export type { ExpireThreadsOptions, PruneStrategy } from "./savers/lifecycle.js";
export { DrizzleSaver, type DrizzleSaverOptions, type ThreadSummary } from "./savers/saver.js";
export { MsgpackSerializer } from "./serde/msgpack.js";
