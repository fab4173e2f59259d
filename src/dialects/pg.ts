/**
 * The PostgreSQL dialect: a few writes combined into one statement of CTEs (one round
 * trip), longer units in a transaction, and retries after a deadlock or serialization
 * failure; its migrations table and lock are in pg-migrations.ts.
 */
import { getTableName, type SQL, sql } from "drizzle-orm";
import { getTableConfig, type PgTable } from "drizzle-orm/pg-core";
import type { PgCheckpointTables } from "../schema/pg.js";
import { MAX_NESTING_DEPTH } from "../serde/bounds.js";
import type { Executor } from "../sql/executor.js";
import { filterDocument } from "../sql/json.js";
import { type Statement, type StatementCombiner, statementCombiner } from "../sql/statements.js";
import { chainBaseBlobs, errorChain, onConflictInsert, readIn, retryOnConflict, settleIn } from "./common-sql.js";
import type { CheckpointColumns, Dialect, MetadataTable, Precondition, ThreadColumns } from "./dialect.js";
import { pgMigrationParts, quote } from "./pg-migrations.js";
import {
  deleteEmptyThread,
  lockThreadRow,
  onConflictThreadPut,
  onConflictThreadRefresh,
  type ThreadSqlParts,
} from "./thread-sql.js";

/** Statements combined into one; more run in a transaction. */
const CTE_STATEMENTS = 8;

function qualifiedName(table: PgTable): string {
  const { schema, name } = getTableConfig(table);
  return schema ? `${quote(schema)}.${quote(name)}` : quote(name);
}

/** The server's SQLSTATE, also under drizzle's DrizzleQueryError wrapper. */
function errorCode(error: unknown): unknown {
  for (const e of errorChain(error)) if (e.code !== undefined) return e.code;
  return undefined;
}

/** A deadlock victim (40P01) or a serialization failure (40001, under a stricter default isolation). */
export const isConflict = (error: unknown) => {
  const code = errorCode(error);
  return code === "40P01" || code === "40001";
};

export function pgDialect(executor: Executor, tables: PgCheckpointTables): Dialect {
  const { checkpoints, checkpointBlobs, checkpointWrites, checkpointThreads } = tables;
  const columns = {
    checkpoints: { table: checkpoints, ...checkpoints, nsKey: checkpoints.checkpointNs },
    blobs: { table: checkpointBlobs, ...checkpointBlobs, nsKey: checkpointBlobs.checkpointNs },
    writes: { table: checkpointWrites, ...checkpointWrites, nsKey: checkpointWrites.checkpointNs },
    threads: { table: checkpointThreads, ...checkpointThreads },
  };
  // now() is the transaction's start: the thread row and the checkpoint get the same time.
  const threadSql: ThreadSqlParts = {
    now: sql`now()`,
    greatest: "greatest",
    json: (value) => sql`${value}::jsonb`,
    rootNsKey: "",
  };

  /** The schema named by the tables (the saver's `schema` option); else they follow search_path. */
  const tablesSchema = getTableConfig(checkpoints).schema;
  const metadataContains = pgMetadataContains(tables);

  return {
    name: "postgres",
    maxJsonDepth: MAX_NESTING_DEPTH,
    columns,
    executor,
    query: (statement) => executor.all(statement),
    ...pgWriteUnits(executor, columns.threads, columns.checkpoints, threadSql),
    threadPut: (values) => [onConflictThreadPut(columns.threads, columns.checkpoints, threadSql, values)],
    putTime: () => threadSql.now,
    insert: onConflictInsert,
    nsKey: (namespace) => namespace,
    jsonParam: (json) => sql`${json}::jsonb`,
    metadataMatches: (entries, table) => metadataContains(sql`${filterDocument(entries)}`, table),
    metadataFilterTemplate: metadataContains,
    jsonField: (document, key) => sql`${document} ->> ${key}::text`,
    // A lookup by the whole key per entry of each checkpoint's versions. Joined as a set,
    // PostgreSQL assumes 100 entries per JSON object and scanned every blob partition; as
    // a semi-join per checkpoint, it hashed the entries and read every value of the thread
    // (its generic plan takes a thread for a few rows), so that reads grew with the
    // thread's length. "limit 1" (the key is unique) keeps the lookup from being
    // flattened into such a join.
    pageBlobs: (b) =>
      sql`page cross join lateral jsonb_each_text(page.channel_versions) as entry cross join lateral (
        select ${b.threadId} as thread_id, ${b.checkpointNs} as checkpoint_ns, ${b.channel} as channel,
               ${b.version} as version, ${b.type} as type, ${b.blob} as blob, ${b.deltaChain} as delta_chain
        from ${b.table}
        where ${b.threadId} = page.thread_id and ${b.nsKey} = page.ns_key
          and ${b.channel} = entry.key and ${b.version} = entry.value
        limit 1
      ) as page_blobs`,
    // Lateral like pageBlobs: as a join, PostgreSQL hashed every blob partition.
    chainBaseBlobs: (head) =>
      chainBaseBlobs(columns.blobs, head, {
        // The limit bounds the planner's estimate (100 rows per set-returning function):
        // unbounded, a generic plan's cost passed jit_above_cost, and JIT compiled the
        // statement on every call (about 150 ms). A chain has one base per set bit of its
        // number, so 16 covers 65,535 values; any base beyond is fetched by delta-read.ts.
        versions: (deltaChain) => ({
          from: sql`lateral (select version from jsonb_array_elements_text(cast(${deltaChain} as jsonb) -> 'bases')
            as bases(version) limit 16) as chain_base`,
          version: sql.raw("chain_base.version"),
        }),
        lookup: "lateral",
      }),
    millisAgo: (ms) => sql`(now() - ${ms}::double precision * interval '1 millisecond')`,
    epochMillis: (ms) => sql`to_timestamp(${ms}::double precision / 1000)`,
    // A number computed by the server: the text form of a timestamptz depends on DateStyle and TimeZone.
    createdAtMillis: (createdAt) => sql`round(extract(epoch from ${createdAt}) * 1000)::float8`,
    tableStats: () => pgTableStats(executor, [checkpoints, checkpointBlobs, checkpointWrites]),
    ...pgMigrationParts(executor, tablesSchema),
  };
}

/**
 * Whether the metadata has every key of `filterJson` (a JSON object's text, as a value
 * or a placeholder) with a JSON-equal value. Containment lets the GIN index find
 * candidates; equality of the metadata's filter keys with the filter makes the match
 * exact (containment alone matches sub-arrays and sub-objects). One predicate with one
 * parameter whatever the number of keys: a predicate per key made planning cost
 * seconds per thousand keys; and the text is the same for every filter (a template).
 */
function pgMetadataContains({ checkpoints, checkpointThreads }: PgCheckpointTables) {
  return (filterJson: SQL, table: MetadataTable = "checkpoints"): SQL => {
    const filter = sql`${filterJson}::jsonb`;
    const metadata = table === "threads" ? checkpointThreads.metadata : checkpoints.metadata;
    return sql`(${metadata} @> ${filter} and (
      select jsonb_object_agg(e.key, e.value)
      from jsonb_each(case when jsonb_typeof(${metadata}) = 'object' then ${metadata} else '{}'::jsonb end) as e
      where jsonb_exists(${filter}, e.key)) = ${filter})`;
  };
}

/** Rows and bytes of each table; partitioned tables keep their rows and indexes in the partitions. */
function pgTableStats(executor: Executor, tables: PgTable[]) {
  return Promise.all(
    tables.map(async (table) => {
      const name = qualifiedName(table);
      const [row] = await executor.all(sql`select (select count(*) from ${table}) as rows,
          (select coalesce(sum(pg_total_relation_size(relid)), 0) from pg_partition_tree(${name}::regclass)) as bytes`);
      return { table: getTableName(table), rows: Number(row.rows), bytes: Number(row.bytes) };
    }),
  );
}

/**
 * The PostgreSQL write units: a single statement as it is, up to CTE_STATEMENTS writes as
 * CTEs of one statement (one round trip, one snapshot), longer ones and claims in a
 * transaction; every unit retried after a deadlock or serialization failure.
 */
function pgWriteUnits(
  executor: Executor,
  threads: ThreadColumns,
  checkpoints: CheckpointColumns,
  threadSql: ThreadSqlParts,
): Pick<Dialect, "atomically" | "atomicallyUntilSettled" | "atomicallyReading" | "refreshThread"> {
  const combine = statementCombiner();
  const lock = (precondition: Precondition) =>
    precondition.claim
      ? combine("claim", [precondition.rows], ([rows]) => sql`${rows} for update skip locked`)
      : precondition.exclusive
        ? combine("exclusive", [precondition.rows], ([rows]) => sql`${rows} for update`)
        : combine("share", [precondition.rows], ([rows]) => sql`${rows} for share`);
  return {
    atomically: (statements, precondition) =>
      retryOnConflict(isConflict, () => writeOnce(executor, combine, lock, statements, precondition)),
    atomicallyUntilSettled: (statements, unit) =>
      retryOnConflict(isConflict, () => executor.transaction((tx) => settleIn(tx, statements, unit, lock))),
    atomicallyReading: (work, precondition) =>
      retryOnConflict(isConflict, () => executor.transaction((tx) => readIn(tx, work, precondition, lock))),
    refreshThread: (threadId) =>
      retryOnConflict(isConflict, () =>
        executor.transaction(async (tx) => {
          // Read committed: each statement after the lock sees what committed before it.
          await tx.all(lockThreadRow(threads, threadId));
          await tx.run(onConflictThreadRefresh(threads, checkpoints, threadSql, threadId));
          await tx.run(deleteEmptyThread(threads, checkpoints, threadId));
        }),
      ),
  };
}

/** Data-modifying statements as the CTEs s<first>, s<first + 1>, ... of one statement. */
const ctes = (writes: SQL[], first = 0) => writes.map((write, i) => sql`${sql.raw(`s${first + i}`)} as (${write})`);

/**
 * A unit with a share-locked precondition as one statement. The locked rows decide it:
 * without them, a division by zero (evaluated at run time, after the lock) aborts every
 * write in it. The main query reads the guard first; the other CTEs run after it, unless
 * the guard reads one: with `afterFirst`, an uncorrelated EXISTS over s0 is a one-time
 * filter, so s0 runs (and takes its row) before the lock.
 */
function guardedStatement(combine: StatementCombiner, precondition: Precondition, statements: Statement[]): Statement {
  if (!precondition.afterFirst) {
    return combine(
      "guarded",
      [precondition.rows, ...statements],
      ([rows, ...writes]) =>
        sql`with guard as (${rows} for share), ${sql.join(ctes(writes), sql`, `)} select 1 / (select count(*) from guard) as found`,
    );
  }
  return combine("guarded-after-first", [precondition.rows, ...statements], ([rows, first, ...writes]) => {
    const guard = sql`guard as (select 1 from (${rows} for share) as locked where exists (select 1 from s0))`;
    const all = [sql`s0 as (${first} returning 1)`, guard, ...ctes(writes, 1)];
    return sql`with ${sql.join(all, sql`, `)} select 1 / (select count(*) from guard) as found`;
  });
}

/** One try of a PostgreSQL write unit (see pgWriteUnits). */
async function writeOnce(
  executor: Executor,
  combine: StatementCombiner,
  lock: (precondition: Precondition) => Statement,
  statements: Statement[],
  precondition: Precondition | undefined,
): Promise<void> {
  // A single statement is atomic on its own. Several independent data-modifying
  // statements become CTEs of one statement: one round trip, one snapshot.
  if (!precondition && statements.length === 1) {
    await executor.run(statements[0]);
    return;
  }
  // Long lists (pruning a long thread) would exceed the 65535 parameters of one statement.
  if (statements.length > CTE_STATEMENTS || precondition?.claim || precondition?.exclusive) {
    await executor.transaction(async (tx) => {
      const before = precondition?.afterFirst ? 1 : 0;
      for (const statement of statements.slice(0, before)) await tx.run(statement);
      if (precondition) {
        const locked = await tx.all(lock(precondition));
        if (locked.length === 0) throw precondition.failure();
      }
      for (const statement of statements.slice(before)) await tx.run(statement);
    });
    return;
  }
  if (!precondition) {
    await executor.run(
      combine(
        "ctes",
        statements,
        (writes) => sql`with ${sql.join(ctes(writes.slice(0, -1)), sql`, `)} ${writes.at(-1)}`,
      ),
    );
    return;
  }
  const guarded = guardedStatement(combine, precondition, statements);
  try {
    await executor.run(guarded);
  } catch (error) {
    if (errorCode(error) === "22012") throw precondition.failure();
    throw error;
  }
}
