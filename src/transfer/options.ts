/**
 * The options of importThreads and exportThreads and of their sources (a database, a transfer
 * file), and their check: known keys only, made before anything is opened, read or written
 * (a misspelt `dryRun` imported for real, a misspelt `threadIds` moved every thread).
 */
import type { Readable } from "node:stream";
import type { SerializerProtocol } from "@langchain/langgraph-checkpoint";
import { optionKeys, requireKnownNestedOptions, requireKnownOptions } from "../known-options.js";
import type { EncryptionOptions } from "../serde/encryption-options.js";
import type { CheckpointTables } from "../wiring/registry.js";
import type { TransferSource } from "./records.js";
import type { FileReadOptions } from "./sources/file.js";
import type { DatabaseSourceOptions } from "./sources/open.js";

/** A transfer file: a path, "-" for stdin, or a stream. */
export interface FileSourceOptions extends FileReadOptions {
  file: string | Readable;
  threadIds?: string[];
}

/** A source: a database (ours or an official saver's), a transfer file, or one already open. */
export type ImportFrom = DatabaseSourceOptions | FileSourceOptions | TransferSource;

export interface TransferProgress {
  /** Threads handled so far (written, skipped or failed). */
  threads: number;
  /** Threads the source holds, when it can tell (a file cannot). */
  total?: number;
}

export interface ImportOptions {
  /** Overwrite target threads that exist with other content (otherwise each is a failure). */
  replace?: boolean;
  /** Read and count everything, write nothing. */
  dryRun?: boolean;
  /** Tables of the application's own schema on the target (see DrizzleSaverOptions.tables). */
  tables?: CheckpointTables;
  /** PostgreSQL: the schema of the target's tables (see DrizzleSaverOptions.schema). */
  schema?: string;
  /**
   * The serializer the target's saver reads with (its `serde`); every imported value is
   * decoded with it before it is written. When omitted: the source's `serde` (the one
   * converted values are written with), else MessagePack (our default).
   */
  serde?: SerializerProtocol;
  /**
   * The target's keys (its saver's `encryption` option): every value is opened where it
   * is sealed (also with a key of the set that is not active), checked, and sealed for
   * the target with the active key. Without it, a sealed value fails its thread.
   */
  encryption?: EncryptionOptions;
  onProgress?: (progress: TransferProgress) => void;
}

export interface ExportOptions {
  onProgress?: (progress: TransferProgress) => void;
  /**
   * With a path: replace a file that exists (the default; the CLI's `--force`). A new
   * file is created with mode 0600, and a symbolic link at the path is refused.
   */
  overwrite?: boolean;
  /**
   * Keys to open sealed values with, so the file holds them in the clear (checked against
   * their place first). Without it, sealed values are written as they are stored.
   */
  decrypt?: EncryptionOptions;
}

const IMPORT_OPTION_KEYS = optionKeys<ImportOptions>({
  replace: true,
  dryRun: true,
  tables: true,
  schema: true,
  serde: true,
  encryption: true,
  onProgress: true,
});
const EXPORT_OPTION_KEYS = optionKeys<ExportOptions>({ onProgress: true, overwrite: true, decrypt: true });
const FILE_SOURCE_OPTION_KEYS = optionKeys<FileSourceOptions>({ file: true, threadIds: true, maxLineBytes: true });
const DATABASE_SOURCE_OPTION_KEYS = optionKeys<DatabaseSourceOptions>({
  url: true,
  format: true,
  schema: true,
  tables: true,
  serde: true,
  threadIds: true,
  filter: true,
});

/** A source already open: it is used as it is (its own fields are its business). */
export function isOpenSource(from: ImportFrom): from is TransferSource {
  return "threads" in from && typeof from.threads === "function";
}

/**
 * The arguments of importThreads or exportThreads (`call`): `options` and, unless it is a
 * source already open, `from` (a transfer file's options when it has `file`, else a
 * database's) hold known keys only.
 */
export function checkTransferCall(
  call: "importThreads" | "exportThreads",
  from: unknown,
  options: unknown,
): asserts from is ImportFrom {
  const isObject = typeof from === "object" && from !== null;
  if (!(isObject && isOpenSource(from as ImportFrom))) {
    const known = isObject && "file" in from ? FILE_SOURCE_OPTION_KEYS : DATABASE_SOURCE_OPTION_KEYS;
    requireKnownNestedOptions(from, `${call}: from`, known);
  }
  requireKnownOptions(options, call, call === "importThreads" ? IMPORT_OPTION_KEYS : EXPORT_OPTION_KEYS);
}
