export type { CheckpointTables, SupportedDatabase } from "./savers/detect.js";
export type { TableStats } from "./savers/dialect.js";
export type { ExpireThreadsOptions, PruneStrategy } from "./savers/lifecycle.js";
export { MigrationError, type MigrationInfo } from "./savers/migrations.js";
export { DrizzleSaver, type DrizzleSaverOptions, type ThreadSummary } from "./savers/saver.js";
export { InvalidInputError, MissingParentError } from "./savers/values.js";
export { MsgpackSerializer, SerializationError } from "./serde/msgpack.js";
