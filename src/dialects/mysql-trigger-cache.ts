/**
 * MariaDB's table cache after a kill (seen on 10.11): a session killed while it opens a
 * table stops parsing that table's trigger definitions part way, and the instance it
 * leaves in the table cache refuses every later INSERT, UPDATE and DELETE on the table,
 * whichever session takes it, until the table is flushed. Only `checkpoints` has triggers
 * (the metadata side table's, migration 0004). The MySQL dialect flushes the table and runs
 * the refused unit again.
 */
import { getTableName, type SQL, sql, type Table } from "drizzle-orm";
import { CheckpointSaverError } from "../errors.js";
import type { Executor } from "../sql/executor.js";
import { errorChain } from "./common-sql.js";

/** How long the repair's FLUSH TABLES waits for transactions that have the table open. */
const FLUSH_WAIT_SECONDS = 30;

/**
 * A statement refused by such an instance (ER_PARSE_ERROR, "Trigger ... has an error in its
 * body" or "Unknown trigger has an error in its body"): refused before it changed a row.
 */
export const isBrokenTriggerCache = (error: unknown) =>
  [...errorChain(error)].some(
    (e) => e.errno === 1064 && /trigger.* has an error in its body/i.test(String(e.sqlMessage ?? e.message)),
  );

/**
 * Drops the table's cached instances; needs RELOAD, else a CheckpointSaverError naming the
 * command. FLUSH TABLES waits for every transaction that has the table open, and statements
 * on the table queue behind it: MariaDB's SET STATEMENT bounds that wait (MySQL has no such
 * clause and flushes unbounded).
 */
export async function flushTableCache(executor: Executor, table: Table, cause: unknown): Promise<void> {
  const flush = sql`flush tables ${table}`;
  const bounded: SQL = sql`set statement lock_wait_timeout = ${sql.raw(String(FLUSH_WAIT_SECONDS))} for ${flush}`;
  try {
    await executor.run(bounded).catch((error) => {
      if (![...errorChain(error)].some((e) => e.errno === 1064)) throw error;
      return executor.run(flush);
    });
  } catch (error) {
    const name = getTableName(table);
    throw new CheckpointSaverError(
      `the database refuses writes to ${name}: a cached copy of the table has triggers that failed to load (MariaDB, after a connection was killed while it opened the table), and flushing it failed (${error instanceof Error ? error.message : String(error)}). Run FLUSH TABLES ${name} as an administrator, or grant this user RELOAD so the saver flushes it itself`,
      { cause },
    );
  }
}
