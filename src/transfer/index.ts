export {
  type ExportOptions,
  type ExportSummary,
  exportThreads,
  type ImportFrom,
  type ImportOptions,
  type ImportSummary,
  importThreads,
  type ThreadFailure,
  type TransferProgress,
} from "./engine.js";
export { FORMAT_NAME, FORMAT_VERSION } from "./format.js";
export type {
  BlobRecord,
  CheckpointRecord,
  RecordCounts,
  ThreadStream,
  TransferRecord,
  TransferSource,
  WriteRecord,
} from "./records.js";
export { MissingPackageError } from "./sources/official.js";
export { type DatabaseSourceOptions, SOURCE_FORMATS, type SourceFormat } from "./sources/open.js";
export { ThreadConflictError } from "./target.js";
