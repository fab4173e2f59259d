/**
 * `listThreads`: the threads with checkpoints matching a metadata filter, in id order, with
 * the count and newest of those checkpoints, streamed in pages.
 */

import { sql } from "drizzle-orm";
import type { Dialect } from "../../dialects/dialect.js";
import { InvalidInputError } from "../../errors.js";
import { optionKeys, requireKnownOptions } from "../../known-options.js";
import { storedFilterEntries } from "../values/metadata.js";
import { notStaging } from "../values/reserved.js";
import { as } from "../values/values.js";

export interface ThreadSummary {
  threadId: string;
  /** Checkpoints of the thread (those matching the filter, when one is given). */
  checkpoints: number;
  latestCheckpointId: string;
  latestCreatedAt: Date;
  /** Pinned with `pinThread`: retention (sweep, expireThreads) leaves it alone. */
  pinned: boolean;
}

/** The options of `listThreads`. */
export interface ListThreadsOptions {
  /** Metadata a checkpoint of the thread must have; every thread without one. */
  filter?: Record<string, unknown>;
  /** Threads listed at most; all by default. */
  limit?: number;
}

const LIST_THREADS_OPTION_KEYS = optionKeys<ListThreadsOptions>({ filter: true, limit: true });

/** Threads listed per query. */
const PAGE_SIZE = 100;

/**
 * Threads that have checkpoints matching `filter` (all threads without one), in id
 * order, with the count and newest of those checkpoints. Streams in pages.
 */
export async function* listThreads(
  dialect: Dialect,
  options: ListThreadsOptions = {},
  /** Runs before each page is read (it throws to stop the listing: the saver closed). */
  beforePage: () => void = () => {},
): AsyncGenerator<ThreadSummary> {
  requireKnownOptions(options as unknown, "listThreads", LIST_THREADS_OPTION_KEYS);
  const { checkpoints: c, threads: t } = dialect.columns;
  const entries = storedFilterEntries(options.filter);
  const { limit } = options;
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 0)) {
    throw new InvalidInputError(`limit must be a non-negative integer, got ${limit}`);
  }
  let remaining = limit ?? Number.POSITIVE_INFINITY;
  let cursor = "";
  while (remaining > 0) {
    const size = Math.min(remaining, PAGE_SIZE);
    const conditions = [sql`${c.threadId} > ${cursor}`, notStaging(c.threadId)];
    if (entries.length > 0) conditions.push(dialect.metadataMatches(entries));
    beforePage();
    const rows = await dialect.query(sql`
      select ${as(c.threadId, "thread_id")}, count(*) as ${sql.identifier("checkpoints")},
             max(${c.checkpointId}) as ${sql.identifier("latest_checkpoint_id")},
             ${dialect.createdAtMillis(sql`max(${c.createdAt})`)} as ${sql.identifier("latest_created_at")},
             (select count(*) from ${t.table} where ${t.threadId} = ${c.threadId} and ${t.pinned})
               as ${sql.identifier("pinned")}
      from ${c.table} where ${sql.join(conditions, sql` and `)}
      group by ${c.threadId} order by ${c.threadId} limit ${sql.raw(String(size))}`);
    for (const row of rows) {
      yield {
        threadId: row.thread_id as string,
        checkpoints: Number(row.checkpoints),
        latestCheckpointId: row.latest_checkpoint_id as string,
        latestCreatedAt: new Date(Number(row.latest_created_at)),
        pinned: Number(row.pinned) > 0,
      };
    }
    if (rows.length < size) return;
    remaining -= rows.length;
    cursor = rows[rows.length - 1].thread_id as string;
  }
}
