/**
 * Thread ids the package keeps for itself: an import stages a thread's rows under
 * `__transfer_staging__:<hash>` (src/transfer/target.ts) before it renames them. Such
 * ids are refused by every call that takes a thread id, and never listed, counted,
 * expired, swept or removed by run id, so staged rows are never taken for a thread.
 */
import { type Column, type SQL, sql } from "drizzle-orm";
import { InvalidInputError } from "../../errors.js";
import { requireId } from "./values.js";

/** Prefix of the ids under which threads are staged while they are imported. */
export const STAGING_PREFIX = "__transfer_staging__:";

function isReservedThreadId(threadId: string): boolean {
  return threadId.startsWith(STAGING_PREFIX);
}

/** A thread id a caller may use: a valid id not starting with {@link STAGING_PREFIX}. */
export function requireThreadId(value: unknown, what = "thread_id"): string {
  const threadId = requireId(value, what);
  if (isReservedThreadId(threadId)) {
    throw new InvalidInputError(
      `${what} "${threadId}" starts with "${STAGING_PREFIX}", which is reserved for threads being imported`,
    );
  }
  return threadId;
}

/**
 * True of a row whose thread id is not a staging id. `substr`, not `like`: the prefix's
 * underscores are `like` wildcards, and every dialect has `substr` (bytes on MySQL's
 * binary ids, the same for this ASCII prefix).
 */
export function notStaging(threadId: Column | SQL): SQL {
  return sql`substr(${threadId}, 1, ${sql.raw(String(STAGING_PREFIX.length))}) <> ${STAGING_PREFIX}`;
}
