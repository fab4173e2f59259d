/**
 * The read-only commands `threads`, `history` and `show`: the threads of a database, the
 * checkpoints of one thread, and the decoded values and pending writes of one checkpoint.
 */
import type { ChannelVersions, CheckpointTuple } from "@langchain/langgraph-checkpoint";
import type { DrizzleSaver, SortOrder, ThreadInfo, ThreadSortKey } from "../../index.js";
import { withSaver } from "../database.js";
import { CliError, UsageError } from "../errors.js";
import type { Layout } from "../layout.js";
import type { Filter } from "../options.js";
import { cell, formatValue, type Output, plural, printTable, StreamingTable, toPlain } from "../output.js";

export interface ThreadsOptions {
  layout?: Layout;
  filter?: Filter;
  sort?: ThreadSortKey;
  order?: SortOrder;
  limit?: number;
  offset?: number;
  count?: boolean;
  json?: boolean;
}

/** Threads read per searchThreads call while listing. */
const THREADS_PAGE = 500;

export async function threads(url: string, options: ThreadsOptions, out: Output): Promise<void> {
  if (options.count && [options.sort, options.order, options.limit, options.offset].some((o) => o !== undefined)) {
    throw new UsageError("--count takes --filter only (not --sort, --order, --limit or --offset)");
  }
  await withSaver(url, { requireSchema: true, readOnly: true, layout: options.layout, io: out.io }, async (saver) => {
    if (options.count) {
      const count = await saver.countThreads({ filter: options.filter });
      if (options.json) await out.json({ count });
      else await out.line(String(count));
      return;
    }
    const table = new StreamingTable(out, [
      { header: "THREAD" },
      { header: "CHECKPOINTS", align: "right" },
      { header: "LATEST CHECKPOINT" },
      { header: "UPDATED AT" },
      { header: "CREATED AT" },
    ]);
    for await (const thread of searchAll(saver, options)) {
      if (options.json) {
        await out.json({
          ...thread,
          createdAt: thread.createdAt.toISOString(),
          updatedAt: thread.updatedAt.toISOString(),
        });
      } else {
        await table.row([
          cell(thread.threadId),
          String(thread.checkpoints),
          thread.latestCheckpointId === null ? "-" : cell(thread.latestCheckpointId),
          thread.updatedAt.toISOString(),
          thread.createdAt.toISOString(),
        ]);
      }
    }
    if (!options.json && (await table.end()) === 0) {
      await out.line(options.filter ? "no thread's newest checkpoint matches the filter" : "no threads");
    }
  });
}

/**
 * The threads the options select, page after page. In id order by default, as the
 * command always listed them; a time sort is newest first unless --order says otherwise.
 */
async function* searchAll(saver: DrizzleSaver, options: ThreadsOptions): AsyncGenerator<ThreadInfo> {
  const sortBy = options.sort ?? "threadId";
  const order = options.order ?? (sortBy === "threadId" ? "asc" : "desc");
  let offset = options.offset ?? 0;
  let remaining = options.limit ?? Number.POSITIVE_INFINITY;
  while (remaining > 0) {
    const limit = Math.min(remaining, THREADS_PAGE);
    const page = await saver.searchThreads({ filter: options.filter, sortBy, order, limit, offset });
    yield* page;
    if (page.length < limit) return;
    offset += page.length;
    remaining -= page.length;
  }
}

/** Fails with "unknown thread" (or "no checkpoints in namespace") when the thread has no checkpoint in `ns`. */
async function requireThread(saver: DrizzleSaver, threadId: string, ns: string): Promise<void> {
  if (await saver.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: ns } })) return;
  if (ns !== "" && (await threadExists(saver, threadId))) {
    throw new CliError(`thread "${threadId}" has no checkpoints in namespace "${ns}"`);
  }
  throw new CliError(`unknown thread "${threadId}"`);
}

/** Whether the thread has a checkpoint in any namespace. */
export async function threadExists(saver: DrizzleSaver, threadId: string): Promise<boolean> {
  for await (const _ of saver.list({ configurable: { thread_id: threadId } }, { limit: 1 })) return true;
  return false;
}

async function requireCheckpoint(saver: DrizzleSaver, threadId: string, ns: string, checkpointId: string) {
  const tuple = await saver.getTuple({
    configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpointId },
  });
  if (tuple) return tuple;
  await requireThread(saver, threadId, ns);
  throw new CliError(`unknown checkpoint "${checkpointId}" in thread "${threadId}"`);
}

/** Channels whose version differs from the parent's (new, changed or gone), in name order. */
function changedChannels(versions: ChannelVersions, parent: ChannelVersions): string[] {
  const names = new Set([...Object.keys(versions), ...Object.keys(parent)]);
  return [...names].filter((name) => String(versions[name]) !== String(parent[name])).sort();
}

export interface HistoryOptions {
  layout?: Layout;
  thread: string;
  ns: string;
  filter?: Filter;
  before?: string;
  limit?: number;
  json?: boolean;
}

export async function history(url: string, options: HistoryOptions, out: Output): Promise<void> {
  await withSaver(url, { requireSchema: true, readOnly: true, layout: options.layout, io: out.io }, async (saver) => {
    const { thread, ns, limit } = options;
    if (options.before !== undefined) await requireCheckpoint(saver, thread, ns, options.before);
    const table = new StreamingTable(out, [
      { header: "CHECKPOINT" },
      { header: "PARENT" },
      { header: "SOURCE" },
      { header: "STEP", align: "right" },
      { header: "TIME" },
      { header: "CHANGED" },
    ]);

    const print = (tuple: CheckpointTuple, next: CheckpointTuple | undefined) =>
      printHistoryRow(saver, out, options, table, tuple, next);

    // One checkpoint more than asked for: the parent of the last one printed, usually.
    const stream = saver.list(
      { configurable: { thread_id: thread, checkpoint_ns: ns } },
      {
        filter: options.filter,
        before: options.before === undefined ? undefined : { configurable: { checkpoint_id: options.before } },
        limit: limit === undefined ? undefined : limit + 1,
      },
    );
    let held: CheckpointTuple | undefined;
    let printed = 0;
    for await (const tuple of stream) {
      if (held) {
        await print(held, tuple);
        printed++;
      }
      held = tuple;
      if (limit !== undefined && printed >= limit) {
        held = undefined;
        break;
      }
    }
    if (held && (limit === undefined || printed < limit)) {
      await print(held, undefined);
      printed++;
    }
    if (!options.json) await table.end();
    if (printed === 0) {
      await requireThread(saver, thread, ns);
      if (!options.json) await out.line("no checkpoints match");
    }
  });
}

/** One checkpoint of `history`, as a table row or a JSON line; `next` is the one listed after it. */
async function printHistoryRow(
  saver: DrizzleSaver,
  out: Output,
  { thread, ns, json }: HistoryOptions,
  table: StreamingTable,
  tuple: CheckpointTuple,
  next: CheckpointTuple | undefined,
): Promise<void> {
  const id = tuple.config.configurable?.checkpoint_id as string;
  const parentId = tuple.parentConfig?.configurable?.checkpoint_id as string | undefined;
  let parentVersions: ChannelVersions = {};
  if (parentId !== undefined && tuple.parentConfig) {
    // Newest first: the parent is usually the next checkpoint of the stream.
    parentVersions =
      next?.config.configurable?.checkpoint_id === parentId
        ? next.checkpoint.channel_versions
        : ((await saver.getTuple(tuple.parentConfig))?.checkpoint.channel_versions ?? {});
  }
  const changed = changedChannels(tuple.checkpoint.channel_versions ?? {}, parentVersions);
  const { source, step } = tuple.metadata ?? {};
  if (json) {
    await out.json({
      threadId: thread,
      ns,
      checkpointId: id,
      parentCheckpointId: parentId ?? null,
      source: source ?? null,
      step: step ?? null,
      time: tuple.checkpoint.ts,
      changed,
      metadata: tuple.metadata ?? {},
    });
  } else {
    await table.row([
      cell(id),
      cell(parentId ?? "-"),
      cell(source ?? ""),
      cell(step ?? ""),
      cell(tuple.checkpoint.ts),
      cell(changed.join(", ")),
    ]);
  }
}

export interface ShowOptions {
  layout?: Layout;
  thread: string;
  ns: string;
  checkpoint?: string;
  json?: boolean;
}

export async function show(url: string, options: ShowOptions, out: Output): Promise<void> {
  await withSaver(url, { requireSchema: true, readOnly: true, layout: options.layout, io: out.io }, async (saver) => {
    const { thread, ns } = options;
    let tuple: CheckpointTuple | undefined;
    if (options.checkpoint !== undefined) {
      tuple = await requireCheckpoint(saver, thread, ns, options.checkpoint);
    } else {
      tuple = await saver.getTuple({ configurable: { thread_id: thread, checkpoint_ns: ns } });
      if (!tuple) {
        await requireThread(saver, thread, ns);
        throw new CliError(`unknown thread "${thread}"`);
      }
    }
    await printShown(out, options, tuple);
  });
}

/** A checkpoint as `show` prints it: JSON, or its fields, values and pending writes. */
async function printShown(out: Output, { thread, ns, json }: ShowOptions, tuple: CheckpointTuple): Promise<void> {
  const { checkpoint, metadata } = tuple;
  const id = tuple.config.configurable?.checkpoint_id as string;
  const parentId = (tuple.parentConfig?.configurable?.checkpoint_id as string | undefined) ?? null;
  const values = checkpoint.channel_values ?? {};
  const writes = tuple.pendingWrites ?? [];
  if (json) {
    await out.json({
      threadId: thread,
      ns,
      checkpointId: id,
      parentCheckpointId: parentId,
      time: checkpoint.ts,
      metadata: metadata ?? {},
      channelVersions: checkpoint.channel_versions ?? {},
      values,
      pendingWrites: writes.map(([taskId, channel, value]) => ({ taskId, channel, value })),
    });
    return;
  }
  const room = Math.max(60, out.io.stdout.columns ?? 120);
  const field = async (name: string, value: string) => out.line(`${name.padEnd(12)}${value}`);
  await field("thread", cell(thread));
  await field("namespace", ns === "" ? "(root)" : cell(ns));
  await field("checkpoint", cell(id));
  await field("parent", parentId === null ? "-" : cell(parentId));
  await field("time", cell(checkpoint.ts));
  await field("source", cell(metadata?.source ?? ""));
  await field("step", cell(metadata?.step ?? ""));
  await field("metadata", formatValue(metadata ?? {}, room - 12, " ".repeat(12)));

  const channels = Object.keys(values).sort();
  await out.line();
  await out.line(`values (${plural(channels.length, "channel")})`);
  const nameWidth = Math.max(0, ...channels.map((name) => cell(name).length));
  for (const name of channels) {
    const indent = " ".repeat(4 + nameWidth);
    await out.line(`  ${cell(name).padEnd(nameWidth)}  ${formatValue(values[name], room - indent.length, indent)}`);
  }

  await out.line();
  await out.line(`pending writes (${writes.length})`);
  if (writes.length > 0) {
    await printTable(
      out,
      [{ header: "TASK" }, { header: "CHANNEL" }, { header: "VALUE" }],
      writes.map(([taskId, channel, value]) => [cell(taskId), cell(channel), JSON.stringify(toPlain(value)) ?? "null"]),
      "  ",
    );
  }
}
