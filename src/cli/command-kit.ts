/**
 * What every command family's registration is lent by program.ts: how a command on the
 * database is declared (--url, --json, the table layout), the shared options (--yes,
 * --filter, --progress), and how a command's URL and layout are read from its options.
 */
import { type Command, Option } from "commander";
import { requireUrl, URL_ENV } from "./database.js";
import { LAYOUT_ENV, type Layout, type LayoutOptions, resolveLayout } from "./layout.js";
import { type Filter, parseFilter } from "./options.js";
import type { Output } from "./output.js";

/** The options every command on the saver's tables has, as commander gives them. */
export interface DatabaseOptions extends LayoutOptions {
  url?: string;
  json?: boolean;
}

/** The databases the running command uses, remembered so an error can name the one it is about. */
export interface RunContext {
  url?: string;
  /** An import's source database. */
  sourceUrl?: string;
}

/** The context's URLs, the target first. */
export function contextUrls(context: RunContext): string[] {
  return [context.url, context.sourceUrl].filter((url): url is string => url !== undefined);
}

export interface CommandKit {
  /** Receives everything printed on stdout, and holds the run's streams. */
  out: Output;
  program: Command;
  /** A subcommand of `parent` with the options every command has: --url (or the environment) and --json. */
  databaseCommand(parent: Command, name: string, description: string): Command;
  /** A command on the saver's tables: --url, --json and the layout options (--table-prefix, --schema, ...). */
  tableCommand(name: string, description: string): Command;
  /** The URL of a command's options (--url or the environment), remembered for error messages. */
  url(options: { url?: string }): string;
  /** An import's source URL, remembered for error messages. */
  source(url: string): string;
  /** The URL and the table layout of a command (the layout is checked against the kind of database). */
  target(options: DatabaseOptions): { url: string; layout: Layout };
  yesOption(): Option;
  filterOption(): Option;
  progressOptions(command: Command): Command;
}

function databaseCommand(parent: Command, name: string, description: string): Command {
  return parent
    .command(name)
    .description(description)
    .addOption(
      new Option(
        "--url <url>",
        "database URL: postgres://, postgresql://, mysql://, mariadb://, file:<path> or a path",
      ).env(URL_ENV),
    )
    .option("--json", "machine-readable output: one JSON document, or JSON lines for a stream")
    .helpOption("-h, --help", "show this help");
}

/** Where the tables are, as the saver's options say it (see layout.ts). */
const layoutOptions = (command: Command) =>
  command
    .addOption(
      new Option(
        "--table-prefix <prefix>",
        "the application's tables made with checkpointTables({ prefix }); none by default",
      ).env(LAYOUT_ENV.tablePrefix),
    )
    .addOption(
      new Option(
        "--schema <schema>",
        "PostgreSQL: the schema of the tables (the saver's schema option; with --table-prefix, checkpointTables({ prefix, schema })); the search path by default",
      ).env(LAYOUT_ENV.schema),
    )
    .addOption(
      new Option(
        "--migrations-table <table>",
        "the table of the shipped migrations (the saver's migrationsTable); langgraph_checkpoint_migrations by default",
      ).env(LAYOUT_ENV.migrationsTable),
    )
    .addOption(
      new Option(
        "--migrations-schema <schema>",
        "PostgreSQL: the schema of that table (the saver's migrationsSchema); the current schema by default",
      ).env(LAYOUT_ENV.migrationsSchema),
    );

/** The kit of `program`; `context` receives the URLs of the command that runs. */
export function commandKit(program: Command, out: Output, context: RunContext): CommandKit {
  const url = (options: { url?: string }) => {
    context.url = requireUrl(options.url);
    return context.url;
  };
  return {
    out,
    program,
    databaseCommand,
    tableCommand: (name, description) => layoutOptions(databaseCommand(program, name, description)),
    url,
    source(url) {
      context.sourceUrl = url;
      return url;
    },
    target(options) {
      const target = url(options);
      return { url: target, layout: resolveLayout(target, options) };
    },
    yesOption: () => new Option("-y, --yes", "delete without asking (required when not on a terminal)"),
    filterOption: () =>
      new Option(
        "--filter <key=value...>",
        "metadata filter, repeatable; the value is JSON when it parses (step=3 is a number, step='\"3\"' a string)",
      ).argParser<Filter | undefined>(parseFilter),
    progressOptions: (command) =>
      command
        .option("--progress", "show a progress bar on stderr even when it is not a terminal")
        .option("--no-progress", "never show a progress bar"),
  };
}
