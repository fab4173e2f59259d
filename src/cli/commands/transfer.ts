/**
 * The `import` and `export` commands, over src/transfer: threads copied in from another
 * database or an export file, and written out as JSON lines.
 */

import { type Command, Option } from "commander";
import {
  type DatabaseSourceOptions,
  DEFAULT_MAX_LINE_BYTES,
  type ExportSummary,
  exportThreads,
  type ImportFrom,
  type ImportSummary,
  importThreads,
  SOURCE_FORMATS,
  type SourceFormat,
  type TransferProgress,
} from "../../transfer/index.js";
import type { CommandKit } from "../command-kit.js";
import { confirmDeletion } from "../confirm.js";
import { withSaver } from "../database.js";
import { CliError, UsageError } from "../errors.js";
import type { CliIo } from "../io.js";
import { encryptionFromEnv, KEYS_ENV } from "../keys.js";
import type { Layout, LayoutOptions } from "../layout.js";
import { type Filter, parseSize } from "../options.js";
import { type Output, plural } from "../output.js";
import { type Progress, startProgress } from "../progress.js";

interface SourceFlags extends LayoutOptions {
  url?: string;
  json?: boolean;
  thread?: string[];
  format?: SourceFormat;
  progress?: boolean;
}

const sourceOptions = (command: Command) =>
  command
    .option("--thread <id...>", "only these threads (repeatable); every thread by default")
    .addOption(
      new Option("--format <format>", "the source's format; detected from its tables by default").choices(
        SOURCE_FORMATS,
      ),
    );

/** Where the tables at --url are, as the transfer functions take it. */
const tablesAt = (layout: Layout) => ({ tables: layout.saver.tables, schema: layout.saver.schema });

/** A progress bar started at the first report, when the total (if the source knows it) is known. */
function progressBar(io: CliIo, label: string, mode: boolean | undefined) {
  let bar: Progress | undefined;
  return {
    report(progress: TransferProgress) {
      bar ??= startProgress(io, progress.total ?? 0, label, mode);
      bar.update(progress.threads);
    },
    stop() {
      bar?.stop();
    },
  };
}

function databaseSource(
  url: string,
  flags: SourceFlags,
  where: { tables?: Layout["saver"]["tables"]; schema?: string },
  filter?: Filter,
): DatabaseSourceOptions {
  return { url, format: flags.format, ...where, threadIds: flags.thread, filter };
}

async function printImport(out: Output, summary: ImportSummary, json: boolean | undefined): Promise<void> {
  if (json) {
    await out.json(summary);
  } else {
    const moved = `${plural(summary.checkpoints, "checkpoint")}, ${plural(summary.blobs, "blob")}, ${plural(summary.writes, "pending write")}`;
    const verb = summary.dryRun ? "would import" : "imported";
    await out.line(
      `${verb} ${plural(summary.imported, "thread")}${summary.dryRun ? "" : `, replaced ${summary.replaced}, unchanged ${summary.unchanged}`} (${moved})`,
    );
    for (const failure of summary.failed)
      await out.line(`failed: thread ${JSON.stringify(failure.threadId)}: ${failure.error}`);
    if (summary.sourceError) await out.line(`the source stopped: ${summary.sourceError}`);
  }
  const problems = summary.failed.length + (summary.sourceError ? 1 : 0);
  if (problems > 0) {
    throw new CliError(
      summary.sourceError && summary.failed.length === 0
        ? `the source could not be read to its end: ${summary.sourceError}`
        : `${plural(summary.failed.length, "thread")} failed`,
    );
  }
}

type ImportFlags = SourceFlags & {
  from?: string;
  fromSchema?: string;
  file?: string;
  replace?: boolean;
  dryRun?: boolean;
  maxLineBytes?: number;
  yes?: boolean;
};
type ExportFlags = SourceFlags & { filter?: Filter; out?: string; force?: boolean; decrypt?: boolean };

async function runImport(kit: CommandKit, options: ImportFlags): Promise<void> {
  const { url, layout } = kit.target(options);
  if ((options.from === undefined) === (options.file === undefined)) {
    throw new UsageError("give the source with exactly one of --from <url> and --file <path>");
  }
  if (options.file !== undefined && (options.format !== undefined || options.fromSchema !== undefined)) {
    throw new UsageError("--format and --from-schema describe a source database, not a file");
  }
  if (options.file === undefined && options.maxLineBytes !== undefined) {
    throw new UsageError("--max-line-bytes bounds the lines of a file (--file), not a source database");
  }
  // The target's tables must exist (the migrate command creates them).
  await withSaver(url, { requireSchema: true, layout, io: kit.out.io }, async () => {});
  // Replacing deletes the target's version of a thread, pinned or not: asked like the other deletions.
  if (options.replace && !options.dryRun) {
    await confirmDeletion(
      kit.out.io,
      "replace every target thread that the source holds with other content, pinned ones too",
      {
        yes: options.yes,
        stdinTaken: options.file === "-",
        stdinHolds: "the file",
      },
    );
  }
  const from: ImportFrom =
    options.file !== undefined
      ? {
          file: options.file === "-" ? kit.out.io.stdin : options.file,
          threadIds: options.thread,
          maxLineBytes: options.maxLineBytes,
        }
      : databaseSource(kit.source(options.from as string), options, { schema: options.fromSchema });
  const bar = progressBar(kit.out.io, options.dryRun ? "count" : "import", options.progress);
  let summary: ImportSummary;
  try {
    summary = await importThreads(url, from, {
      ...tablesAt(layout),
      replace: options.replace,
      dryRun: options.dryRun,
      // The target's keys from the environment: sealed values are checked and re-sealed for it.
      encryption: encryptionFromEnv(),
      onProgress: (progress) => bar.report(progress),
    });
  } finally {
    bar.stop();
  }
  await printImport(kit.out, summary, options.json);
}

async function runExport(kit: CommandKit, options: ExportFlags): Promise<void> {
  const { url, layout } = kit.target(options);
  if (options.force && options.out === undefined) throw new UsageError("--force applies to --out only");
  const decrypt = options.decrypt ? encryptionFromEnv() : undefined;
  if (options.decrypt) {
    if (!decrypt) throw new UsageError(`--decrypt needs the keys in ${KEYS_ENV}`);
    kit.out.warn("warning: --decrypt writes the values in the clear: protect the file as you would the keys");
  }
  const bar = progressBar(kit.out.io, "export", options.progress);
  let summary: ExportSummary;
  try {
    summary = await exportThreads(
      databaseSource(url, options, tablesAt(layout), options.filter),
      options.out ?? kit.out.io.stdout,
      {
        onProgress: (progress) => bar.report(progress),
        overwrite: options.force === true,
        decrypt,
      },
    );
  } finally {
    bar.stop();
  }
  // With the file on stdout, the summary goes to stderr, escaped as every line the CLI prints.
  const report = async (text: string) => (options.out === undefined ? kit.out.warn(text) : kit.out.line(text));
  if (options.json && options.out !== undefined) await kit.out.json(summary);
  else {
    await report(
      `exported ${plural(summary.threads - summary.failed.length, "thread")} (${plural(summary.checkpoints, "checkpoint")}, ${plural(summary.blobs, "blob")}, ${plural(summary.writes, "pending write")})`,
    );
    for (const failure of summary.failed) {
      await report(`failed: thread ${JSON.stringify(failure.threadId)}: ${failure.error}`);
    }
  }
  if (summary.failed.length > 0) throw new CliError(`${plural(summary.failed.length, "thread")} failed`);
}

export function registerTransferCommands(kit: CommandKit): void {
  kit
    .progressOptions(
      sourceOptions(
        kit.tableCommand(
          "import",
          "copy threads into this database from another one (ours or an official saver's) or from an export file",
        ),
      )
        .option("--from <url>", "source database URL (ours on any database, or the official savers' tables)")
        .option(
          "--from-schema <schema>",
          "PostgreSQL source: the schema of its tables (ours: the saver's schema option; the official saver's: its schema option, default public)",
        )
        .option("--file <path>", 'a file written by the export command; "-" reads stdin')
        .option("--replace", "overwrite target threads that exist with other content (asks first)")
        .option("-y, --yes", "replace without asking (required with --replace when not on a terminal)")
        .option("--dry-run", "read and count what would be imported, write nothing")
        .addOption(
          new Option(
            "--max-line-bytes <size>",
            `the longest line read from --file (bytes, or 512KiB, 64MiB, ...); a longer line fails its thread (default ${DEFAULT_MAX_LINE_BYTES / 1024 / 1024}MiB)`,
          ).argParser(parseSize),
        ),
    )
    .action((options: ImportFlags) => runImport(kit, options));

  kit
    .progressOptions(
      sourceOptions(kit.tableCommand("export", "write threads to a file (JSON lines, see docs/transfer-format.md)"))
        .addOption(kit.filterOption())
        .option("--out <file>", "write to this new file (mode 0600) instead of stdout; never through a symbolic link")
        .option("--force", "with --out: overwrite the file if it exists")
        .option(
          "--decrypt",
          "write sealed values in the clear (keys from LANGGRAPH_CHECKPOINT_KEYS); by default they are written sealed, as stored",
        ),
    )
    .action((options: ExportFlags) => runExport(kit, options));
}
