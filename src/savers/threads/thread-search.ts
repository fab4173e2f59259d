/**
 * `searchThreads` and `countThreads`: threads read from the per-thread table, filtered
 * on the metadata of their newest root checkpoint, sorted and paged.
 */
import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { type SQL, sql } from "drizzle-orm";
import type { Dialect } from "../../dialects/dialect.js";
import { InvalidInputError } from "../../errors.js";
import { optionKeys, requireKnownOptions } from "../../known-options.js";
import { parseMetadata, storedFilterEntries } from "../values/metadata.js";
import { notStaging } from "../values/reserved.js";
import { as, isRecord } from "../values/values.js";

/** A thread as the per-thread table keeps it (see src/schema). */
export interface ThreadInfo {
  threadId: string;
  /** Time of the thread's first checkpoint, in any namespace. */
  createdAt: Date;
  /** Time of its newest checkpoint, in any namespace. */
  updatedAt: Date;
  /** Its checkpoints in the root namespace "". */
  checkpoints: number;
  /** Its newest root checkpoint; null when it has subgraph checkpoints only. */
  latestCheckpointId: string | null;
  /** That checkpoint's metadata; null when it has subgraph checkpoints only. */
  metadata: CheckpointMetadata | null;
}

export type ThreadSortKey = "updatedAt" | "createdAt" | "threadId";
export type SortOrder = "asc" | "desc";

export interface SearchThreadsOptions {
  /**
   * Metadata the thread's newest root checkpoint must have, compared exactly as
   * `list` does. Without one (or with `{}`), every thread matches.
   */
  filter?: Record<string, unknown>;
  /** Default "updatedAt"; ties are broken by thread id in the same order. */
  sortBy?: ThreadSortKey;
  /** Default "desc". */
  order?: SortOrder;
  /** Default 10, as the hosted platform's thread search. */
  limit?: number;
  /** Matching threads skipped first; default 0. */
  offset?: number;
}

export interface CountThreadsOptions {
  filter?: Record<string, unknown>;
}

const SEARCH_OPTION_KEYS = optionKeys<SearchThreadsOptions>({
  filter: true,
  sortBy: true,
  order: true,
  limit: true,
  offset: true,
});
const COUNT_OPTION_KEYS = optionKeys<CountThreadsOptions>({ filter: true });

const SORT_KEYS: readonly ThreadSortKey[] = ["updatedAt", "createdAt", "threadId"];
const ORDERS: readonly SortOrder[] = ["asc", "desc"];
const DEFAULT_LIMIT = 10;

function optionsOf<T extends object>(options: unknown, method: string, allowed: readonly string[]): Partial<T> {
  if (options === undefined) return {};
  requireKnownOptions(options, method, allowed);
  return options as Partial<T>;
}

function count(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new InvalidInputError(`searchThreads: ${name} must be a non-negative integer, got ${String(value)}`);
  }
  return value;
}

function oneOf<T extends string>(value: unknown, allowed: readonly T[], name: string, fallback: T): T {
  if (value === undefined) return fallback;
  if (typeof value !== "string" || !(allowed as readonly string[]).includes(value)) {
    throw new InvalidInputError(`searchThreads: ${name} must be one of ${allowed.map((v) => `"${v}"`).join(", ")}`);
  }
  return value as T;
}

/** The filter's predicate on the per-thread table, or none. */
function filterCondition(dialect: Dialect, filter: unknown, method: string): SQL {
  if (filter !== undefined && !isRecord(filter)) throw new InvalidInputError(`${method}: filter must be an object`);
  const entries = storedFilterEntries(filter);
  const t = dialect.columns.threads;
  const conditions = [notStaging(t.threadId)];
  if (entries.length > 0) conditions.push(dialect.metadataMatches(entries, "threads"));
  return sql` where ${sql.join(conditions, sql` and `)}`;
}

/** Threads whose newest root checkpoint matches the filter, a page of them in the order asked. */
export async function searchThreads(dialect: Dialect, options?: SearchThreadsOptions): Promise<ThreadInfo[]> {
  const given = optionsOf<SearchThreadsOptions>(options, "searchThreads", SEARCH_OPTION_KEYS);
  const sortBy = oneOf(given.sortBy, SORT_KEYS, "sortBy", "updatedAt");
  const order = oneOf(given.order, ORDERS, "order", "desc");
  const limit = count(given.limit, "limit", DEFAULT_LIMIT);
  const offset = count(given.offset, "offset", 0);
  const where = filterCondition(dialect, given.filter, "searchThreads");
  if (limit === 0) return [];
  const t = dialect.columns.threads;
  const direction = sql.raw(order);
  const sortColumn = { updatedAt: t.updatedAt, createdAt: t.createdAt, threadId: t.threadId }[sortBy];
  const orderBy =
    sortColumn === t.threadId
      ? sql`${t.threadId} ${direction}`
      : sql`${sortColumn} ${direction}, ${t.threadId} ${direction}`;
  const rows = await dialect.query(sql`
    select ${as(t.threadId, "thread_id")},
      ${dialect.createdAtMillis(sql`${t.createdAt}`)} as ${sql.identifier("created_at")},
      ${dialect.createdAtMillis(sql`${t.updatedAt}`)} as ${sql.identifier("updated_at")},
      ${as(t.checkpoints, "checkpoints")}, ${as(t.latestCheckpointId, "latest_checkpoint_id")},
      ${as(t.metadata, "metadata")}
    from ${t.table}${where}
    order by ${orderBy} limit ${sql.raw(String(limit))} offset ${sql.raw(String(offset))}`);
  return rows.map((row) => ({
    threadId: row.thread_id as string,
    createdAt: new Date(Number(row.created_at)),
    updatedAt: new Date(Number(row.updated_at)),
    checkpoints: Number(row.checkpoints),
    latestCheckpointId: (row.latest_checkpoint_id as string | null) ?? null,
    metadata: row.metadata === null || row.metadata === undefined ? null : (parseMetadata(row.metadata) as never),
  }));
}

/** How many threads `searchThreads` with the same filter finds in all. */
export async function countThreads(dialect: Dialect, options?: CountThreadsOptions): Promise<number> {
  const given = optionsOf<CountThreadsOptions>(options, "countThreads", COUNT_OPTION_KEYS);
  const t = dialect.columns.threads;
  const where = filterCondition(dialect, given.filter, "countThreads");
  const [row] = await dialect.query(sql`select count(*) as ${sql.identifier("n")} from ${t.table}${where}`);
  return Number(row.n);
}
