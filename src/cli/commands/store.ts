/**
 * The `store ls|get|search|sweep` commands: the store's namespaces, one item, a filtered
 * search, and removing expired items. Reads never renew a ttl (refreshTtl: false).
 * Namespaces are written as their labels joined by "." (which no label contains). Sealed
 * items open with the keys from the environment (cli/keys.ts), as the other commands do.
 */
import { existsSync } from "node:fs";
import type { Item } from "@langchain/langgraph-checkpoint";
import type { Command } from "commander";
import { DrizzleStore } from "../../index.js";
import type { CommandKit } from "../command-kit.js";
import { openFailure, sqlitePath } from "../database.js";
import { CliError } from "../errors.js";
import { encryptionFromEnv } from "../keys.js";
import { type Filter, parseCount, parseFilter, parsePositive } from "../options.js";
import { cell, type Output, printTable } from "../output.js";

interface StoreCommandOptions {
  url: string;
  json?: boolean;
  schema?: string;
}

/** The options every store command has, as commander gives them. */
interface CommonOptions {
  url?: string;
  json?: boolean;
  schema?: string;
}

/** "users.u1.memories" as labels; "" is the empty namespace. */
const labels = (text: string | undefined): string[] => (text === undefined || text === "" ? [] : text.split("."));

async function withStore<T>(options: StoreCommandOptions, run: (store: DrizzleStore) => Promise<T>): Promise<T> {
  const path = sqlitePath(options.url);
  if (path !== undefined && path !== ":memory:" && path.length > 0 && !existsSync(path)) {
    throw new CliError(`no SQLite database at "${path}" (the migrate command creates one)`);
  }
  let store: DrizzleStore;
  try {
    const encryption = encryptionFromEnv();
    store = await DrizzleStore.fromUrl(options.url, {
      ...(options.schema ? { schema: options.schema } : {}),
      ...(encryption ? { encryption } : {}),
    });
  } catch (error) {
    throw openFailure(error);
  }
  try {
    return await run(store);
  } finally {
    await store.close().catch(() => {});
  }
}

const plainItem = (item: Item & { score?: number }) => ({
  namespace: item.namespace,
  key: item.key,
  value: item.value,
  createdAt: item.createdAt.toISOString(),
  updatedAt: item.updatedAt.toISOString(),
  ...(item.score !== undefined && { score: item.score }),
});

async function printItems(out: Output, items: Item[], json?: boolean): Promise<void> {
  if (json) {
    for (const item of items) await out.json(plainItem(item));
    return;
  }
  await printTable(
    out,
    [{ header: "NAMESPACE" }, { header: "KEY" }, { header: "UPDATED" }, { header: "VALUE" }],
    items.map((item) => [
      cell(item.namespace.join(".")),
      cell(item.key),
      item.updatedAt.toISOString(),
      cell(JSON.stringify(item.value)),
    ]),
  );
}

/** The `store ls` flags. */
interface ListOptions extends CommonOptions {
  prefix?: string;
  suffix?: string;
  maxDepth?: number;
  limit?: number;
  offset?: number;
}

async function list(options: ListOptions & StoreCommandOptions, out: Output): Promise<void> {
  await withStore(options, async (s) => {
    const found = await s.listNamespaces({
      prefix: options.prefix === undefined ? undefined : labels(options.prefix),
      suffix: options.suffix === undefined ? undefined : labels(options.suffix),
      maxDepth: options.maxDepth,
      limit: options.limit,
      offset: options.offset,
    });
    for (const namespace of found) await (options.json ? out.json(namespace) : out.line(namespace.join(".")));
  });
}

export function registerStoreCommands({ program, databaseCommand: command, url, out }: CommandKit): void {
  const target = <T extends CommonOptions>(options: T): T & StoreCommandOptions => ({ ...options, url: url(options) });
  const store = program
    .command("store")
    .description("the long-term memory of DrizzleStore: namespaces, items, search, expired items")
    .helpOption("-h, --help", "show this help");
  const withSchema = (c: Command) => c.option("--schema <schema>", "PostgreSQL: the schema of the store's table");

  withSchema(command(store, "ls", "namespaces, in path order (labels joined by '.')"))
    .option("--prefix <namespace>", "only namespaces under this one ('*' matches any label)")
    .option("--suffix <namespace>", "only namespaces ending with these labels ('*' matches any label)")
    .option("--max-depth <n>", "truncate namespaces to n labels", parsePositive)
    .option("--limit <n>", "at most n namespaces (default 100)", parseCount)
    .option("--offset <n>", "skip the first n namespaces", parseCount)
    .action((options: ListOptions) => list(target(options), out));

  withSchema(command(store, "get", "one item, as JSON"))
    .argument("<namespace>", "labels joined by '.'")
    .argument("<key>", "the item's key")
    .action(async (namespace: string, key: string, options: CommonOptions) => {
      const opts = target(options);
      await withStore(opts, async (s) => {
        const item = await s.get(labels(namespace), key, { refreshTtl: false });
        if (!item) throw new CliError(`no item "${key}" in namespace "${namespace}"`);
        await out.json(plainItem(item));
      });
    });

  withSchema(command(store, "search", "items under a namespace prefix, most recently updated first"))
    .argument("[prefix]", "labels joined by '.'; every namespace by default", "")
    .option(
      "--filter <key=value...>",
      'filter on the value\'s members, repeatable; the value is JSON when it parses (n={"$gt":3})',
      parseFilter,
    )
    .option("--limit <n>", "at most n items (default 10)", parseCount)
    .option("--offset <n>", "skip the first n items", parseCount)
    .action(async (prefix: string, options: CommonOptions & { filter?: Filter; limit?: number; offset?: number }) => {
      const opts = target(options);
      await withStore(opts, async (s) => {
        const items = await s.search(labels(prefix), {
          filter: options.filter,
          limit: options.limit,
          offset: options.offset,
          refreshTtl: false,
        });
        await printItems(out, items, opts.json);
      });
    });

  withSchema(command(store, "sweep", "remove the expired items; prints how many")).action(
    async (options: { url?: string; json?: boolean }) => {
      const opts = target(options);
      await withStore(opts, async (s) => {
        const removed = await s.sweepExpiredItems();
        await (opts.json
          ? out.json({ removed })
          : out.line(`removed ${removed} expired item${removed === 1 ? "" : "s"}`));
      });
    },
  );
}
