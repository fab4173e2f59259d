/**
 * The `copy`, `prune` and `expire` commands: copy a thread to new ids, trim or delete
 * threads given by id, and prune or delete every thread idle since a date.
 */
import type { DrizzleSaver } from "../../index.js";
import { confirmDeletion } from "../confirm.js";
import { withSaver } from "../database.js";
import { CliError, UsageError } from "../errors.js";
import type { CliIo } from "../io.js";
import type { Layout } from "../layout.js";
import type { Strategy } from "../options.js";
import { cell, type Output, plural, StreamingTable } from "../output.js";
import { progressShown, startProgress } from "../progress.js";
import { threadExists } from "./inspect.js";

interface LifecycleOptions {
  layout?: Layout;
  dryRun?: boolean;
  json?: boolean;
  /** --progress / --no-progress; undefined: a bar on a terminal only. */
  progress?: boolean;
}

/** Checkpoints of a thread in every namespace, counted as they stream by; `beyond(n)`: those a keep-last-n prune removes. */
async function countCheckpoints(
  saver: DrizzleSaver,
  threadId: string,
): Promise<{ checkpoints: number; namespaces: number; beyond: (keepLast: number) => number }> {
  let checkpoints = 0;
  const perNamespace = new Map<string, number>();
  for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) {
    checkpoints++;
    const ns = String(tuple.config.configurable?.checkpoint_ns ?? "");
    perNamespace.set(ns, (perNamespace.get(ns) ?? 0) + 1);
  }
  const beyond = (keepLast: number) =>
    [...perNamespace.values()].reduce((sum, count) => sum + Math.max(0, count - keepLast), 0);
  return { checkpoints, namespaces: perNamespace.size, beyond };
}

const quoted = (ids: string[]) => ids.map((id) => JSON.stringify(id)).join(", ");

export async function copy(
  url: string,
  source: string,
  targetList: string[],
  options: LifecycleOptions,
  out: Output,
): Promise<void> {
  const targets = [...new Set(targetList)];
  if (targets.includes(source)) throw new UsageError(`cannot copy thread "${source}" onto itself`);
  await withSaver(url, { requireSchema: true, layout: options.layout, io: out.io }, async (saver) => {
    if (!(await threadExists(saver, source))) throw new CliError(`unknown thread "${source}"`);
    for (const target of targets) {
      if (await threadExists(saver, target)) throw new CliError(`target thread "${target}" already has checkpoints`);
    }
    if (options.dryRun) {
      const { checkpoints, namespaces } = await countCheckpoints(saver, source);
      const counts = { checkpoints, namespaces };
      if (options.json) {
        await out.json({ dryRun: true, source, targets, ...counts });
      } else {
        await out.line(
          `would copy thread ${JSON.stringify(source)} (${plural(counts.checkpoints, "checkpoint")}, ${plural(counts.namespaces, "namespace")}) to ${quoted(targets)}`,
        );
      }
      return;
    }
    const bar = startProgress(out.io, targets.length, "copy", options.progress);
    try {
      for (const target of targets) {
        await saver.copyThread(source, target);
        bar.increment();
      }
    } finally {
      bar.stop();
    }
    if (options.json) await out.json({ source, targets });
    else await out.line(`copied thread ${JSON.stringify(source)} to ${quoted(targets)}`);
  });
}

/** Thread ids from the arguments; "-" reads more from stdin, one per line. */
export async function readThreadIds(io: CliIo, args: string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const arg of args) {
    if (arg !== "-") {
      ids.push(arg);
      continue;
    }
    let rest = "";
    io.stdin.setEncoding("utf8");
    for await (const chunk of io.stdin) {
      const lines = (rest + String(chunk)).split("\n");
      rest = lines.pop() ?? "";
      for (const line of lines) if (line.replace(/\r$/, "").length > 0) ids.push(line.replace(/\r$/, ""));
    }
    if (rest.replace(/\r$/, "").length > 0) ids.push(rest.replace(/\r$/, ""));
  }
  return [...new Set(ids)];
}

export interface PruneOptions extends LifecycleOptions {
  strategy: Strategy;
  /** --keep-last: with keep_latest, checkpoints kept per namespace (default 1). */
  keepLast?: number;
  /** --yes: delete without asking. */
  yes?: boolean;
}

/** What a prune removes, in the words of the confirmation question. */
function pruneAction(count: number, strategy: Strategy, keepLast = 1): string {
  const threads = plural(count, "thread");
  if (strategy === "delete") return `delete ${threads} with all their checkpoints`;
  const newest = keepLast === 1 ? "the newest" : `the newest ${keepLast}`;
  return `prune ${threads}, removing every checkpoint but ${newest} of each namespace`;
}

export async function prune(url: string, args: string[], options: PruneOptions, out: Output): Promise<void> {
  const ids = await readThreadIds(out.io, args);
  if (ids.length === 0) throw new UsageError("no thread ids given");
  const { strategy, keepLast } = options;
  if (keepLast !== undefined && strategy !== "keep_latest") {
    throw new UsageError("--keep-last applies to --strategy keep_latest only");
  }
  await withSaver(url, { requireSchema: true, layout: options.layout, io: out.io }, async (saver) => {
    if (options.dryRun) {
      const table = new StreamingTable(out, [
        { header: "THREAD" },
        { header: "CHECKPOINTS", align: "right" },
        { header: "NAMESPACES", align: "right" },
        { header: "REMOVE", align: "right" },
      ]);
      const rows: { threadId: string; checkpoints: number; namespaces: number; remove: number }[] = [];
      for (const threadId of ids) {
        const { checkpoints, namespaces, beyond } = await countCheckpoints(saver, threadId);
        if (checkpoints === 0) throw new CliError(`unknown thread "${threadId}"`);
        rows.push({
          threadId,
          checkpoints,
          namespaces,
          remove: strategy === "delete" ? checkpoints : beyond(keepLast ?? 1),
        });
      }
      let removed = 0;
      for (const row of rows) {
        removed += row.remove;
        if (options.json) await out.json({ dryRun: true, strategy, ...row });
        else await table.row([cell(row.threadId), String(row.checkpoints), String(row.namespaces), String(row.remove)]);
      }
      if (!options.json) {
        await table.end();
        await out.line(
          `would remove ${plural(removed, "checkpoint")} from ${plural(rows.length, "thread")} (strategy ${strategy})`,
        );
      }
      return;
    }
    // Every id is checked before anything is removed.
    for (const threadId of ids) {
      if (!(await threadExists(saver, threadId))) throw new CliError(`unknown thread "${threadId}"`);
    }
    await confirmDeletion(out.io, pruneAction(ids.length, strategy, keepLast), {
      yes: options.yes,
      stdinTaken: args.includes("-"),
    });
    const bar = startProgress(out.io, ids.length, "prune", options.progress);
    try {
      for (const threadId of ids) {
        await saver.prune([threadId], { strategy, keepLast });
        bar.increment();
      }
    } finally {
      bar.stop();
    }
    if (options.json) await out.json({ threads: ids.length, strategy });
    else await out.line(`pruned ${plural(ids.length, "thread")} (strategy ${strategy})`);
  });
}

export interface ExpireOptions extends LifecycleOptions {
  idleSince: Date;
  strategy: Strategy;
  batchSize?: number;
  /** --yes: expire without asking. */
  yes?: boolean;
}

export async function expire(url: string, options: ExpireOptions, out: Output): Promise<void> {
  const { idleSince, strategy } = options;
  const since = idleSince.toISOString();
  await withSaver(url, { requireSchema: true, layout: options.layout, io: out.io }, async (saver) => {
    if (options.dryRun) {
      const table = new StreamingTable(out, [
        { header: "THREAD" },
        { header: "CHECKPOINTS", align: "right" },
        { header: "LATEST AT" },
      ]);
      // The threads the run would handle (its own rule: unpinned, idle by the thread's row),
      // shown with their checkpoints in thread id order.
      const idle = new Set<string>();
      await saver.expireThreads({ idleSince, strategy, dryRun: true, onThread: (threadId) => idle.add(threadId) });
      let count = 0;
      for await (const thread of saver.listThreads()) {
        if (!idle.has(thread.threadId)) continue;
        count++;
        if (options.json) {
          await out.json({ dryRun: true, strategy, ...thread, latestCreatedAt: thread.latestCreatedAt.toISOString() });
        } else {
          await table.row([cell(thread.threadId), String(thread.checkpoints), thread.latestCreatedAt.toISOString()]);
        }
      }
      if (!options.json) {
        await table.end();
        await out.line(`would expire ${plural(count, "thread")} idle since ${since} (strategy ${strategy})`);
      }
      return;
    }
    // The question and the bar need a total: count the idle threads first, unless neither is shown.
    let total = 0;
    if (!options.yes || progressShown(out.io, options.progress)) {
      total = await saver.expireThreads({ idleSince, strategy, dryRun: true });
    }
    const verb = strategy === "delete" ? "delete" : "prune";
    await confirmDeletion(
      out.io,
      `${verb} ${plural(total, "thread")} idle since ${since} (strategy ${strategy})`,
      options,
    );
    const bar = startProgress(out.io, total, "expire", options.progress);
    let expired: number;
    try {
      expired = await saver.expireThreads({
        idleSince,
        strategy,
        batchSize: options.batchSize,
        onProgress: ({ threads }) => bar.update(threads),
      });
    } finally {
      bar.stop();
    }
    if (options.json) await out.json({ threads: expired, strategy, idleSince: since });
    else await out.line(`expired ${plural(expired, "thread")} idle since ${since} (strategy ${strategy})`);
  });
}
