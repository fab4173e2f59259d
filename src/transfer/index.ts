/** The transfer API the package exports: export and import of threads, the file format's records and limits. */
export {
  type ExportSummary,
  exportThreads,
  type ImportSummary,
  importThreads,
  type ThreadFailure,
} from "./engine.js";
export { FORMAT_NAME, FORMAT_VERSION } from "./format.js";
export type { ExportOptions, FileSourceOptions, ImportFrom, ImportOptions, TransferProgress } from "./options.js";
export type {
  BlobRecord,
  CheckpointRecord,
  RecordCounts,
  ThreadStream,
  TransferRecord,
  TransferSource,
  WriteRecord,
} from "./records.js";
export type { FileReadOptions } from "./sources/file.js";
export { DEFAULT_MAX_LINE_BYTES, LARGEST_MAX_LINE_BYTES } from "./sources/lines.js";
export { type DatabaseSourceOptions, SOURCE_FORMATS, type SourceFormat } from "./sources/open.js";
