/**
 * exportThreads and importThreads: reads threads from a source and writes them to a file or a target database,
 * thread by thread, with progress and per-thread failures.
 */
import type { Writable } from "node:stream";
import { databaseMessage, InvalidInputError } from "../errors.js";
import { MsgpackSerializer } from "../serde/msgpack.js";
import { Sealer } from "../serde/sealing.js";
import { connect } from "../wiring/connect.js";
import { resolve as resolveDialect, type SupportedDatabase } from "../wiring/registry.js";
import { ThreadChecker } from "./check.js";
import { abortLine, endLine, footerLine, headerLine, recordLine, threadLine } from "./format.js";
import { checkTransferCall, type ExportOptions, type ImportFrom, type ImportOptions, isOpenSource } from "./options.js";
import { type ExportFile, openExportFile } from "./out-file.js";
import { countRecord, noRecords, type RecordCounts, type TransferSource } from "./records.js";
import { RecordSealing } from "./sealing.js";
import { FileSource } from "./sources/file.js";
import { type DatabaseSourceOptions, openDatabaseSource } from "./sources/open.js";
import { type ThreadOutcome, ThreadWriter } from "./target.js";

export interface ThreadFailure {
  threadId: string;
  error: string;
}

export interface ImportSummary extends RecordCounts {
  dryRun: boolean;
  /** Threads written anew (or, in a dry run, that would be read). */
  imported: number;
  replaced: number;
  /** Threads the target already held with the same content. */
  unchanged: number;
  failed: ThreadFailure[];
  /** A problem with the source as a whole (a truncated file); threads before it were handled. */
  sourceError?: string;
}

export interface ExportSummary extends RecordCounts {
  threads: number;
  failed: ThreadFailure[];
}

async function openSource(from: ImportFrom): Promise<{ source: TransferSource; owned: boolean }> {
  if (isOpenSource(from)) return { source: from, owned: false };
  if ("file" in from) {
    const { file, threadIds, maxLineBytes } = from;
    const source =
      typeof file === "string"
        ? FileSource.open(file, { threadIds }, { maxLineBytes })
        : new FileSource(file, { threadIds }, { maxLineBytes });
    return { source, owned: true };
  }
  return { source: await openDatabaseSource(from as DatabaseSourceOptions), owned: true };
}

/**
 * Copies threads from a source into one of our databases (its tables must exist:
 * call `setup()` first). Each thread is written whole or not at all; a thread that
 * fails is reported and the others go on. Running it again finishes an interrupted run.
 */
export async function importThreads(
  target: SupportedDatabase | string,
  from: ImportFrom,
  options: ImportOptions = {},
): Promise<ImportSummary> {
  // Before the target is connected to (a SQLite file would be created) and the source opened.
  checkTransferCall("importThreads", from, options);
  const connection = typeof target === "string" ? await connect(target) : undefined;
  try {
    const { dialect } = resolveDialect(connection?.db ?? (target as SupportedDatabase), options.tables, options.schema);
    const { source, owned } = await openSource(from);
    try {
      const threadIds = "file" in from ? from.threadIds : undefined;
      const serde = options.serde ?? ("url" in from ? from.serde : undefined);
      return await runImport(source, new ThreadWriter(dialect), { ...options, serde, threadIds });
    } finally {
      if (owned) await source.close().catch(() => {});
    }
  } finally {
    await connection?.close();
  }
}

async function runImport(
  source: TransferSource,
  writer: ThreadWriter,
  options: ImportOptions & { threadIds?: string[] },
): Promise<ImportSummary> {
  const summary: ImportSummary = {
    dryRun: options.dryRun === true,
    imported: 0,
    replaced: 0,
    unchanged: 0,
    failed: [],
    ...noRecords(),
  };
  const total = options.onProgress ? await source.countThreads() : undefined;
  const serde = options.serde ?? new MsgpackSerializer();
  const sealing = new RecordSealing(options.encryption ? new Sealer(options.encryption) : undefined);
  let handled = 0;
  const named = new Set(options.threadIds ?? []);
  try {
    for await (const { threadId, records } of source.threads()) {
      named.delete(threadId);
      const counts = noRecords();
      const checker = new ThreadChecker(serde);
      try {
        if (!options.dryRun) await writer.begin(threadId);
        for await (const record of records) {
          countRecord(counts, record);
          const plain = sealing.open(threadId, record);
          await checker.add(plain);
          if (!options.dryRun) await writer.add(sealing.seal(threadId, plain));
        }
        if (counts.checkpoints === 0)
          throw new InvalidInputError(`thread "${threadId}" has no checkpoints in the source`);
        checker.finish();
        const outcome: ThreadOutcome = options.dryRun
          ? "imported"
          : await writer.finish(threadId, options.replace === true);
        summary[outcome]++;
        if (outcome !== "unchanged") {
          summary.checkpoints += counts.checkpoints;
          summary.blobs += counts.blobs;
          summary.writes += counts.writes;
        }
      } catch (error) {
        if (!options.dryRun) await writer.abort().catch(() => {});
        summary.failed.push({ threadId, error: databaseMessage(error) });
      }
      options.onProgress?.({ threads: ++handled, total });
    }
  } catch (error) {
    // A header that is not ours means nothing was read: that is an error of the call itself.
    if (handled === 0 && error instanceof InvalidInputError && /^line 1:/.test(error.message)) throw error;
    summary.sourceError = databaseMessage(error);
  }
  // A file yields only the threads it holds: the named ones it lacks are failures too.
  if (!summary.sourceError)
    for (const threadId of named) summary.failed.push({ threadId, error: "not found in the source" });
  return summary;
}

/** Writes lines to a stream, waiting whenever it asks to (so memory stays bounded). */
function lineWriter(stream: Writable): (line: string) => Promise<void> {
  return async (line) => {
    if (stream.write(`${line}\n`)) return;
    await new Promise<void>((resolve, reject) => {
      const done = () => {
        stream.off("drain", done);
        stream.off("error", reject);
        resolve();
      };
      stream.on("drain", done);
      stream.once("error", reject);
    });
  };
}

/**
 * Writes threads from a source as a transfer file (docs/transfer-format.md) to a
 * path or a stream. A thread the source cannot read gets an `abort` line and is
 * reported; the others go on.
 */
export async function exportThreads(
  from: ImportFrom,
  to: string | Writable,
  options: ExportOptions = {},
): Promise<ExportSummary> {
  checkTransferCall("exportThreads", from, options);
  const { source, owned } = await openSource(from);
  // The file once the source is open: a source that cannot be opened leaves no file behind.
  let file: ExportFile | undefined;
  try {
    file = typeof to === "string" ? openExportFile(to, { overwrite: options.overwrite ?? true }) : undefined;
  } catch (error) {
    if (owned) await source.close().catch(() => {});
    throw error;
  }
  const stream = file?.stream ?? (to as Writable);
  const failure = new Promise<never>((_, reject) => stream.once("error", reject));
  failure.catch(() => {});
  let summary: ExportSummary;
  try {
    summary = await Promise.race([writeFile(source, lineWriter(stream), options), failure]);
  } catch (error) {
    // A file cut short is not left behind, nor put in place of the one it was to replace.
    await file?.discard();
    throw error;
  } finally {
    if (owned) await source.close().catch(() => {});
  }
  await file?.commit();
  return summary;
}

async function writeFile(
  source: TransferSource,
  write: (line: string) => Promise<void>,
  options: ExportOptions,
): Promise<ExportSummary> {
  const summary: ExportSummary = { threads: 0, failed: [], ...noRecords() };
  const total = options.onProgress ? await source.countThreads() : undefined;
  const opening = options.decrypt ? new RecordSealing(new Sealer(options.decrypt)) : undefined;
  await write(headerLine());
  for await (const { threadId, records } of source.threads()) {
    const counts = noRecords();
    await write(threadLine(threadId));
    try {
      for await (const record of records) {
        countRecord(counts, record);
        await write(recordLine(opening ? opening.open(threadId, record) : record));
      }
      if (counts.checkpoints === 0)
        throw new InvalidInputError(`thread "${threadId}" has no checkpoints in the source`);
      await write(endLine(threadId, counts));
      summary.checkpoints += counts.checkpoints;
      summary.blobs += counts.blobs;
      summary.writes += counts.writes;
    } catch (error) {
      await write(abortLine(threadId, databaseMessage(error)));
      summary.failed.push({ threadId, error: databaseMessage(error) });
    }
    summary.threads++;
    options.onProgress?.({ threads: summary.threads, total });
  }
  await write(footerLine(summary.threads));
  return summary;
}
