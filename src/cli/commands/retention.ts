/**
 * The `sweep`, `pin` and `unpin` commands: one retention pass over the idle unpinned
 * threads, and taking threads out of retention or giving them back.
 */
import { InvalidArgumentError, Option } from "commander";
import { parseDuration } from "../../duration.js";
import type { DrizzleSaver, SweepResult } from "../../index.js";
import type { CommandKit } from "../command-kit.js";
import { confirmDeletion } from "../confirm.js";
import { withSaver } from "../database.js";
import { CliError, UsageError } from "../errors.js";
import type { Layout } from "../layout.js";
import { PRUNE_STRATEGIES, parsePositive, type Strategy } from "../options.js";
import { cell, type Output, plural, StreamingTable } from "../output.js";
import { progressShown, startProgress } from "../progress.js";
import { threadExists } from "./inspect.js";
import { readThreadIds } from "./lifecycle.js";

export interface SweepCommandOptions {
  layout?: Layout;
  json?: boolean;
  idleFor: { text: string; ms: number };
  strategy: Strategy;
  keepLast?: number;
  batchSize?: number;
  dryRun?: boolean;
  yes?: boolean;
  progress?: boolean;
}

/** `--idle-for`: a duration ("30d", "12h", "1d12h"), kept as written for messages. */
function parseIdleFor(argument: string): { text: string; ms: number } {
  const ms = parseDuration(argument);
  if (ms === undefined || ms <= 0)
    throw new InvalidArgumentError('expected a duration such as "30d", "12h", "90m", "1d12h"');
  return { text: argument.trim(), ms };
}

function describePolicy(options: SweepCommandOptions): string {
  const keep = options.strategy === "keep_latest" ? `, keeping ${options.keepLast ?? 1} per namespace` : "";
  return `idle for ${options.idleFor.text} (strategy ${options.strategy}${keep})`;
}

async function sweep(url: string, options: SweepCommandOptions, out: Output): Promise<void> {
  if (options.keepLast !== undefined && options.strategy !== "keep_latest") {
    throw new UsageError("--keep-last applies to --strategy keep_latest only");
  }
  const policy = {
    idleFor: options.idleFor.ms,
    strategy: options.strategy,
    keepLast: options.keepLast,
    batchSize: options.batchSize,
  };
  await withSaver(url, { requireSchema: true, layout: options.layout, io: out.io }, async (saver) => {
    if (options.dryRun) {
      await dryRun(saver, policy, options, out);
      return;
    }
    // The question and the bar need a total: count the idle threads first, unless neither is shown.
    const counted = !options.yes || progressShown(out.io, options.progress);
    const total = counted ? (await saver.sweep({ ...policy, dryRun: true })).scanned : 0;
    const verb = options.strategy === "delete" ? "delete" : "prune";
    await confirmDeletion(out.io, `${verb} ${plural(total, "thread")} ${describePolicy(options)}`, options);
    const result = await runSweep(out, saver, policy, total, options.progress);
    if (options.json) {
      await out.json({
        ...result,
        strategy: options.strategy,
        idleFor: options.idleFor.text,
        keepLast: options.keepLast ?? null,
      });
      return;
    }
    await out.line(
      `swept ${plural(result.scanned, "thread")} ${describePolicy(options)}: ${result.deleted} deleted, ${result.pruned} pruned, ${result.unchanged} unchanged, ${result.skipped} skipped`,
    );
  });
}

/** The threads a sweep would handle: a table (or JSON lines), then how many. */
async function dryRun(
  saver: DrizzleSaver,
  policy: Parameters<DrizzleSaver["sweep"]>[0],
  options: SweepCommandOptions,
  out: Output,
): Promise<void> {
  const table = new StreamingTable(out, [{ header: "THREAD" }]);
  // The callback cannot wait: rows are printed in order on a chain, as the batches are read.
  let printing = Promise.resolve();
  const print = async (threadId: string) => {
    if (options.json) await out.json({ dryRun: true, strategy: options.strategy, threadId });
    else await table.row([cell(threadId)]);
  };
  const result = await saver.sweep({
    ...policy,
    dryRun: true,
    onThread: (threadId) => {
      printing = printing.then(() => print(threadId));
    },
  });
  await printing;
  if (!options.json) {
    await table.end();
    await out.line(`would sweep ${plural(result.scanned, "thread")} ${describePolicy(options)}`);
  }
}

async function runSweep(
  out: Output,
  saver: DrizzleSaver,
  policy: Parameters<DrizzleSaver["sweep"]>[0],
  total: number,
  progress: boolean | undefined,
): Promise<SweepResult> {
  const bar = startProgress(out.io, total, "sweep", progress);
  try {
    return await saver.sweep({ ...policy, onProgress: ({ scanned }) => bar.update(scanned) });
  } finally {
    bar.stop();
  }
}

async function setPinned(
  url: string,
  args: string[],
  pinned: boolean,
  options: { layout?: Layout; json?: boolean },
  out: Output,
): Promise<void> {
  const ids = await readThreadIds(out.io, args);
  if (ids.length === 0) throw new UsageError("no thread ids given");
  await withSaver(url, { requireSchema: true, layout: options.layout, io: out.io }, async (saver) => {
    // Every id is checked before anything changes.
    for (const threadId of ids) {
      if (!(await threadExists(saver, threadId))) throw new CliError(`unknown thread "${threadId}"`);
    }
    for (const threadId of ids) await (pinned ? saver.pinThread(threadId) : saver.unpinThread(threadId));
    if (options.json) await out.json({ threads: ids, pinned });
    else await out.line(`${pinned ? "pinned" : "unpinned"} ${plural(ids.length, "thread")}`);
  });
}

export function registerRetentionCommands({ out, tableCommand, progressOptions, yesOption, target }: CommandKit): void {
  progressOptions(
    tableCommand("sweep", "one retention pass: delete or prune every unpinned thread idle for a duration (sweep)")
      .requiredOption(
        "--idle-for <duration>",
        'idle for at least this long: "30d", "12h", "90m", "1d12h", "2w"',
        parseIdleFor,
      )
      .addOption(
        new Option("--strategy <strategy>", "delete: remove the threads; keep_latest: keep their newest checkpoints")
          .choices(PRUNE_STRATEGIES)
          .default("delete"),
      )
      .option("--keep-last <n>", "with keep_latest: checkpoints kept per namespace (default 1)", parsePositive)
      .option("--batch-size <n>", "threads per batch (default 100)", parsePositive)
      .option("--dry-run", "list the threads a sweep would handle, change nothing (never asks)")
      .addOption(yesOption()),
  ).action(async (options: SweepCommandOptions & { url?: string }) => {
    const { url, layout } = target(options);
    await sweep(url, { ...options, layout }, out);
  });
  for (const pinned of [true, false]) {
    tableCommand(
      pinned ? "pin" : "unpin",
      pinned
        ? "pin threads: no retention policy (sweep, expire) touches them"
        : "let retention policies handle threads again",
    )
      .argument("<threads...>", 'thread ids; "-" reads more ids from stdin, one per line')
      .action(async (ids: string[], options: { url?: string; json?: boolean }) => {
        const { url, layout } = target(options);
        await setPinned(url, ids, pinned, { ...options, layout }, out);
      });
  }
}
