/**
 * The SQL keeping the per-thread table (`checkpoint_threads`) current: the upsert of a
 * `put` and the recomputation of one thread's row after checkpoints were removed.
 * The shipped migrations backfill the table with the same definitions, in SQL text.
 */
import { type SQL, sql } from "drizzle-orm";
import type { CheckpointColumns, ThreadColumns, ThreadPutValues } from "./dialect.js";

const id = (name: string) => sql.identifier(name);

/** The row's columns a put or a recomputation writes, in this order. */
const written = (t: ThreadColumns) =>
  sql.join(
    [t.threadId, t.createdAt, t.updatedAt, t.checkpoints, t.latestCheckpointId, t.metadata].map((c) => id(c.name)),
    sql`, `,
  );

/** 1 when the put adds a root checkpoint that did not exist before (a put may replace one). */
function addedRootCheckpoint(c: CheckpointColumns, v: ThreadPutValues, rootCount: SQL): SQL {
  return sql`case when exists (select 1 from ${c.table} where ${c.threadId} = ${v.threadId}
    and ${c.nsKey} = ${v.nsKey} and ${c.checkpointId} = ${v.checkpointId}) then 0 else ${rootCount} end`;
}

export interface ThreadSqlParts {
  /** The current time as the dialect stores `created_at`. */
  now: SQL;
  /** `greatest` (PostgreSQL, MySQL) or SQLite's scalar `max`. */
  greatest: string;
  /** A JSON text parameter typed for the metadata column. */
  json: (value: unknown) => SQL;
  /** The root namespace's key (the `nsKey` value of ""). */
  rootNsKey: unknown;
}

/**
 * PostgreSQL's and SQLite's put upsert: ON CONFLICT with the existing row as `cur`.
 * The row lock it takes serialises the put with a deleter or sweeper of the thread.
 * A root checkpoint with an id not below the newest one becomes the newest.
 * The count's existence check reads the statement's snapshot: when the same new
 * checkpoint is put twice at once (a retried put on PostgreSQL), both find it new, and
 * the one that waited for the row lock sees it as the row's newest and adds nothing.
 */
export function onConflictThreadPut(
  t: ThreadColumns,
  c: CheckpointColumns,
  parts: ThreadSqlParts,
  v: ThreadPutValues,
): SQL {
  const cur = (name: string) => sql.raw(`cur.${JSON.stringify(name)}`);
  const excluded = (name: string) => sql.raw(`excluded.${JSON.stringify(name)}`);
  const latest = t.latestCheckpointId.name;
  const newer = sql`${excluded(latest)} is not null and (${cur(latest)} is null or ${excluded(latest)} >= ${cur(latest)})`;
  return sql`insert into ${t.table} as cur (${written(t)})
    values (${v.threadId}, ${parts.now}, ${parts.now}, ${addedRootCheckpoint(c, v, sql`cast(${v.rootCount} as integer)`)},
      ${v.latestCheckpointId}, ${parts.json(v.metadata)})
    on conflict (${id(t.threadId.name)}) do update set
      ${id(t.updatedAt.name)} = ${sql.raw(parts.greatest)}(${cur(t.updatedAt.name)}, ${excluded(t.updatedAt.name)}),
      ${id(t.checkpoints.name)} = ${cur(t.checkpoints.name)} + case when ${excluded(latest)} = ${cur(latest)} then 0
        else ${excluded(t.checkpoints.name)} end,
      ${id(latest)} = case when ${newer} then ${excluded(latest)} else ${cur(latest)} end,
      ${id(t.metadata.name)} = case when ${newer} then ${excluded(t.metadata.name)} else ${cur(t.metadata.name)} end`;
}

/**
 * MySQL's first statement of a put: takes the thread row's lock (creating the row when
 * the thread is new) before the upsert reads `checkpoints`. Under REPEATABLE READ that
 * read takes gap locks, and taken before the row lock they deadlocked concurrent puts
 * to one thread (each waiting for the other's row lock or gap). A new row's count is
 * NEW_THREAD_MARK until the upsert that follows gives it the put's own time and count.
 */
/** The count of a row the lock statement created, never a real count. */
const NEW_THREAD_MARK = -1;

export function mysqlThreadLock(t: ThreadColumns, parts: ThreadSqlParts, v: ThreadPutValues): SQL {
  const threadId = id(t.threadId.name);
  return sql`insert into ${t.table} (${threadId}, ${id(t.createdAt.name)}, ${id(t.updatedAt.name)}, ${id(t.checkpoints.name)})
    values (${v.threadId}, ${parts.now}, ${parts.now}, ${NEW_THREAD_MARK})
    on duplicate key update ${threadId} = ${threadId}`;
}

/**
 * MySQL's put upsert. ON DUPLICATE KEY UPDATE assigns left to right and later
 * assignments see earlier ones: the metadata is decided before the newest id changes.
 */
export function mysqlThreadPut(t: ThreadColumns, c: CheckpointColumns, parts: ThreadSqlParts, v: ThreadPutValues): SQL {
  const col = (name: string) => id(name);
  const incoming = (name: string) => sql`values(${id(name)})`;
  const latest = t.latestCheckpointId.name;
  const newer = sql`${incoming(latest)} is not null and (${col(latest)} is null or ${incoming(latest)} >= ${col(latest)})`;
  const fresh = sql`${col(t.checkpoints.name)} = ${NEW_THREAD_MARK}`;
  return sql`insert into ${t.table} (${written(t)})
    values (${v.threadId}, ${parts.now}, ${parts.now}, ${addedRootCheckpoint(c, v, sql`${v.rootCount}`)},
      ${v.latestCheckpointId}, ${parts.json(v.metadata)})
    on duplicate key update
      ${col(t.createdAt.name)} = if(${fresh}, ${incoming(t.createdAt.name)}, ${col(t.createdAt.name)}),
      ${col(t.metadata.name)} = if(${newer}, ${incoming(t.metadata.name)}, ${col(t.metadata.name)}),
      ${col(latest)} = if(${newer}, ${incoming(latest)}, ${col(latest)}),
      ${col(t.checkpoints.name)} = greatest(${col(t.checkpoints.name)}, 0) + ${incoming(t.checkpoints.name)},
      ${col(t.updatedAt.name)} = greatest(${col(t.updatedAt.name)}, ${incoming(t.updatedAt.name)})`;
}

/** The thread's row as its checkpoints give it: a select of the `written` columns (no row when it has none). */
function recomputed(c: CheckpointColumns, parts: ThreadSqlParts, threadId: string): SQL {
  const newestRoot = (column: SQL) =>
    sql`(select ${column} from ${c.table} where ${c.threadId} = ${threadId} and ${c.nsKey} = ${parts.rootNsKey}
      order by ${c.checkpointId} desc limit 1)`;
  const rootCount = sql`count(case when ${c.nsKey} = ${parts.rootNsKey} then 1 end)`;
  // The id as a value, not the column: a sharded database (Citus) routes the insert by it.
  return sql`select ${threadId}, min(${c.createdAt}), max(${c.createdAt}), ${rootCount},
      ${newestRoot(sql`${c.checkpointId}`)}, ${newestRoot(sql`${c.metadata}`)}
    from ${c.table} where ${c.threadId} = ${threadId} group by ${c.threadId}`;
}

/** Replaces the thread's row by what its checkpoints give (ON CONFLICT dialects); keeps `pinned`. */
export function onConflictThreadRefresh(
  t: ThreadColumns,
  c: CheckpointColumns,
  parts: ThreadSqlParts,
  threadId: string,
): SQL {
  const set = [t.createdAt, t.updatedAt, t.checkpoints, t.latestCheckpointId, t.metadata].map(
    (column) => sql`${id(column.name)} = ${sql.raw(`excluded.${JSON.stringify(column.name)}`)}`,
  );
  // The select has a WHERE clause, which SQLite needs to read ON CONFLICT after INSERT ... SELECT.
  return sql`insert into ${t.table} (${written(t)}) ${recomputed(c, parts, threadId)}
    on conflict (${id(t.threadId.name)}) do update set ${sql.join(set, sql`, `)}`;
}

/** MySQL's recomputation of the thread's row; keeps `pinned`. */
export function mysqlThreadRefresh(
  t: ThreadColumns,
  c: CheckpointColumns,
  parts: ThreadSqlParts,
  threadId: string,
): SQL {
  const set = [t.createdAt, t.updatedAt, t.checkpoints, t.latestCheckpointId, t.metadata].map(
    (column) => sql`${id(column.name)} = values(${id(column.name)})`,
  );
  return sql`insert into ${t.table} (${written(t)}) ${recomputed(c, parts, threadId)}
    on duplicate key update ${sql.join(set, sql`, `)}`;
}

/** Removes the thread's row when it has no checkpoint left. */
export function deleteEmptyThread(t: ThreadColumns, c: CheckpointColumns, threadId: string): SQL {
  return sql`delete from ${t.table} where ${t.threadId} = ${threadId}
    and not exists (select 1 from ${c.table} where ${c.threadId} = ${threadId})`;
}

/**
 * Locks the thread's row, so that what follows sees every put that committed before (a
 * thread with no row yet locks nothing: the refresh that follows creates its row).
 */
export function lockThreadRow(t: ThreadColumns, threadId: string): SQL {
  return sql`select 1 as ${id("locked")} from ${t.table} where ${t.threadId} = ${threadId} for update`;
}
