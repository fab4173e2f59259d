/**
 * The command line's commands and options, declared with commander; each command's work is
 * in commands/, the options every command shares in command-kit.ts.
 */
import { readFileSync } from "node:fs";
import { Command, Option } from "commander";
import { type CommandKit, commandKit, type DatabaseOptions, type RunContext } from "./command-kit.js";
import { registerEncryptionCommands } from "./commands/encryption.js";
import { history, show, type ThreadsOptions, threads } from "./commands/inspect.js";
import { copy as copyThreads, expire, prune } from "./commands/lifecycle.js";
import { migrate } from "./commands/migrate.js";
import { registerRetentionCommands } from "./commands/retention.js";
import { status } from "./commands/status.js";
import { registerStoreCommands } from "./commands/store.js";
import { registerTransferCommands } from "./commands/transfer.js";
import { URL_ENV } from "./database.js";
import {
  type Filter,
  PRUNE_STRATEGIES,
  parseCount,
  parseFilter,
  parseInstant,
  parsePositive,
  type Strategy,
} from "./options.js";
import type { Output } from "./output.js";
import { escapeTerminal } from "./terminal-text.js";

/** The `threads` flags: what the command takes, less what the database options carry. */
type ThreadsCommandOptions = Omit<ThreadsOptions, "layout" | "json">;

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
      version?: string;
    };
    return pkg.version ?? "unknown";
  } catch {
    return "unknown";
  }
}

/** The command-line program; `out` receives everything printed on stdout, and holds the run's streams. */
export function buildProgram(out: Output, context: RunContext = {}): Command {
  const program = new Command("langgraph-checkpoint-drizzle")
    .description(
      "Administer LangGraph checkpoints stored by langgraph-checkpoint-drizzle (PostgreSQL, MySQL/MariaDB, SQLite).\n" +
        `The database URL comes from --url or the ${URL_ENV} environment variable; --table-prefix, --schema, ` +
        "--migrations-table and --migrations-schema (or their LANGGRAPH_CHECKPOINT_* variables) say where the tables are. " +
        "prune, expire and sweep ask before deleting; where nobody can answer they refuse unless --yes is given.",
    )
    // Messages that quote an argument go through the same escaping as everything else.
    .configureOutput({
      writeOut: (text) => out.io.stdout.write(text),
      writeErr: (text) => out.io.stderr.write(text),
      outputError: (text, write) => write(escapeTerminal(text, { keepNewlines: true })),
    })
    .version(version(), "-V, --version", "print the version")
    .helpOption("-h, --help", "show this help")
    .helpCommand("help [command]", "show help for a command")
    .showSuggestionAfterError(true)
    .exitOverride();
  const kit = commandKit(program, out, context);
  registerSchemaCommands(kit);
  registerInspectCommands(kit);
  registerCopyCommand(kit);
  registerLifecycleCommands(kit);
  registerRetentionCommands(kit);
  registerTransferCommands(kit);
  registerStoreCommands(kit);
  registerEncryptionCommands(kit);
  return program;
}

/** migrate and status: the shipped migrations. */
function registerSchemaCommands({ out, tableCommand, target }: CommandKit): void {
  tableCommand(
    "migrate",
    "apply the pending shipped migrations (safe when several processes run it at once); tables with a --table-prefix are the application's to migrate",
  )
    .option("--dry-run", "only list the pending migrations")
    .addOption(
      new Option(
        "--spider-shards <urls>",
        "the URL is a MariaDB Spider head: migrate these data nodes (comma-separated mysql:// URLs) and build its Spider tables",
      ).env("LANGGRAPH_SPIDER_SHARDS"),
    )
    .action(async (options: DatabaseOptions & { dryRun?: boolean; spiderShards?: string }) => {
      const { url, layout } = target(options);
      await migrate(url, { ...options, layout }, out);
    });

  tableCommand("status", "applied and pending migrations, row counts and sizes of the tables")
    .option(
      "--check",
      "exit with 1 when a migration is pending (with --table-prefix: when the tables are missing), 0 when the database is up to date; for CI gates",
    )
    .action(async (options: DatabaseOptions & { check?: boolean }) => {
      const { url, layout } = target(options);
      await status(url, { ...options, layout }, out);
    });
}

/** threads, history and show: reading what is stored. */
function registerInspectCommands({ out, tableCommand, target, filterOption }: CommandKit): void {
  tableCommand(
    "threads",
    "threads with their root checkpoint count, newest root checkpoint and times (searchThreads), in id order by default",
  )
    .addOption(
      new Option(
        "--filter <key=value...>",
        "metadata filter on each thread's newest root checkpoint, repeatable; the value is JSON when it parses",
      ).argParser<Filter | undefined>(parseFilter),
    )
    .addOption(
      new Option("--sort <key>", "sort by threadId (default), updatedAt or createdAt").choices([
        "threadId",
        "updatedAt",
        "createdAt",
      ]),
    )
    .addOption(
      new Option("--order <order>", "asc or desc; by default asc for threadId, desc (newest first) for times").choices([
        "asc",
        "desc",
      ]),
    )
    .option("--limit <n>", "at most n threads", parseCount)
    .option("--offset <n>", "skip the first n threads", parseCount)
    .option("--count", "print only how many threads match the filter")
    .action(async (options: DatabaseOptions & ThreadsCommandOptions) => {
      const { url, layout } = target(options);
      await threads(url, { ...options, layout }, out);
    });

  tableCommand("history", "checkpoints of a thread, newest first, with the channels each one changed")
    .requiredOption("--thread <id>", "thread id")
    .option("--ns <namespace>", "checkpoint namespace (a subgraph's); the root namespace by default", "")
    .addOption(filterOption())
    .option("--before <checkpoint-id>", "only checkpoints older than this one")
    .option("--limit <n>", "at most n checkpoints", parseCount)
    .action(
      async (
        options: DatabaseOptions & { thread: string; ns: string; filter?: Filter; before?: string; limit?: number },
      ) => {
        const { url, layout } = target(options);
        await history(url, { ...options, layout }, out);
      },
    );

  tableCommand("show", "decoded state values and pending writes of one checkpoint (the newest by default)")
    .requiredOption("--thread <id>", "thread id")
    .option("--checkpoint <id>", "checkpoint id; the thread's newest checkpoint by default")
    .option("--ns <namespace>", "checkpoint namespace; the root namespace by default", "")
    .action(async (options: DatabaseOptions & { thread: string; checkpoint?: string; ns: string }) => {
      const { url, layout } = target(options);
      await show(url, { ...options, layout }, out);
    });
}

/** copy: one thread to many. */
function registerCopyCommand({ out, tableCommand, target, progressOptions }: CommandKit): void {
  progressOptions(
    tableCommand("copy", "copy a thread (every namespace, writes included) to new, empty threads")
      .argument("<source>", "thread to copy")
      .argument("<targets...>", "new thread ids")
      .option("--dry-run", "check the threads and count what would be copied, change nothing"),
  ).action(
    async (source: string, targets: string[], options: DatabaseOptions & { dryRun?: boolean; progress?: boolean }) => {
      const { url, layout } = target(options);
      await copyThreads(url, source, targets, { ...options, layout }, out);
    },
  );
}

/** prune and expire: fewer checkpoints, or fewer threads. */
function registerLifecycleCommands({ out, tableCommand, target, progressOptions, yesOption }: CommandKit): void {
  progressOptions(
    tableCommand("prune", "keep only the newest checkpoint of threads, or delete them")
      .argument("<threads...>", 'thread ids; "-" reads more ids from stdin, one per line')
      .addOption(
        new Option("--strategy <strategy>", "keep_latest: the newest checkpoint of each namespace; delete: everything")
          .choices(PRUNE_STRATEGIES)
          .default("keep_latest"),
      )
      .option("--keep-last <n>", "with keep_latest: checkpoints kept per namespace (default 1)", parsePositive)
      .option("--dry-run", "show what would be removed, change nothing (never asks)")
      .addOption(yesOption()),
  ).action(
    async (
      ids: string[],
      options: DatabaseOptions & {
        strategy: Strategy;
        keepLast?: number;
        dryRun?: boolean;
        progress?: boolean;
        yes?: boolean;
      },
    ) => {
      const { url, layout } = target(options);
      await prune(url, ids, { ...options, layout }, out);
    },
  );

  progressOptions(
    tableCommand("expire", "prune or delete every thread whose newest checkpoint is older than a date")
      .requiredOption(
        "--idle-since <date|duration>",
        'an ISO date (2025-01-31, 2025-01-31T12:00:00Z) or a duration ago ("30d", "12h", "1w")',
        (value: string) => parseInstant(value),
      )
      .addOption(
        new Option("--strategy <strategy>", "delete: remove the threads; keep_latest: keep their newest checkpoints")
          .choices(PRUNE_STRATEGIES)
          .default("delete"),
      )
      .option("--batch-size <n>", "threads per batch (default 100)", parsePositive)
      .option("--dry-run", "list the idle threads, change nothing (never asks)")
      .addOption(yesOption()),
  ).action(
    async (
      options: DatabaseOptions & {
        idleSince: Date;
        strategy: Strategy;
        batchSize?: number;
        dryRun?: boolean;
        progress?: boolean;
        yes?: boolean;
      },
    ) => {
      const { url, layout } = target(options);
      await expire(url, { ...options, layout }, out);
    },
  );
}
