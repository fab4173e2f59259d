/**
 * The SQLite dialect (better-sqlite3, libSQL, Cloudflare D1): metadata filters through
 * json_each, and atomic units as BEGIN IMMEDIATE transactions or, on batch-only D1, as
 * batches whose precondition is a statement that fails the batch.
 */
import { getTableName, type SQL, sql } from "drizzle-orm";
import { UnsupportedDriverError } from "../errors.js";
import { type SQLiteCheckpointTables, UNINDEXED_SOURCE } from "../schema/sqlite.js";
import type { Executor } from "../sql/executor.js";
import { isBound, type Statement } from "../sql/statements.js";
import { chainBaseBlobs, errorChain, onConflictInsert, retryOnConflict, settleIn } from "./common-sql.js";
import type { Dialect, Precondition } from "./dialect.js";
import { allOf, type JsonKind, type JsonNodeOps, jsonEquals } from "./json-equality.js";
import { deleteEmptyThread, onConflictThreadPut, onConflictThreadRefresh, type ThreadSqlParts } from "./thread-sql.js";

const KINDS: Record<JsonKind, string> = {
  string: "'text'",
  number: "'integer', 'real'",
  boolean: "'true', 'false'",
  null: "'null'",
  object: "'object'",
  array: "'array'",
};

/**
 * A node is the value and type of a json_each row (or the metadata column itself).
 * Members are found by key with bound parameters, never through a JSON path, so
 * any key works: SQLite paths cannot quote a key that contains a double quote.
 */
interface JsonNode {
  value: SQL;
  type?: SQL;
}

function jsonEachOps(): JsonNodeOps<JsonNode> {
  let aliases = 0; // unique within one query
  return {
    member(parent, key, test) {
      const alias = `j${++aliases}`;
      const child = { value: sql.raw(`${alias}.value`), type: sql.raw(`${alias}.type`) };
      return sql`exists (select 1 from json_each(${parent.value}) as ${sql.raw(alias)} where ${sql.raw(alias)}.key = ${key} and ${test(child)})`;
    },
    is: (node, kind) => sql`${node.type} in (${sql.raw(KINDS[kind])})`,
    stringEquals: (node, value) => sql`${node.value} = ${value}`,
    // As doubles on both sides, like JavaScript: json_each reads 2**55 back as an exact integer.
    numberEquals: (node, value) => sql`cast(${node.value} as real) = cast(${value} as real)`,
    booleanEquals: (node, value) => sql`${node.type} = ${value ? "true" : "false"}`,
    size: (node) => sql`(select count(*) from json_each(${node.value}))`,
  };
}

/** What the SQLite error of a failed guard quotes ("bad JSON path: '<this>'"). */
const GUARD_FAILED = "langgraph-checkpoint-drizzle: precondition failed";

const guards = new WeakMap<SQL, SQL>();

/**
 * A statement that fails (and so rolls back) its batch unless `rows`, a select, has a
 * row: json_extract raises "bad JSON path" for a path not starting with "$", quoting
 * it. This is how a batch-only driver checks a precondition: nothing can be read
 * between the statements of a batch, but one of them can stop it.
 */
function guard(rows: Statement): Statement {
  const wrap = (select: SQL) => {
    let wrapped = guards.get(select);
    if (!wrapped) {
      wrapped = sql`select json_extract('{}', case when exists (${select}) then '$' else '${sql.raw(GUARD_FAILED)}' end)`;
      guards.set(select, wrapped); // one template per template: compiled once
    }
    return wrapped;
  };
  return isBound(rows) ? { template: wrap(rows.template), values: rows.values } : wrap(rows);
}

/** Whether a batch failed on its guard (the message may be wrapped by the driver). */
function guardFailed(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; depth++, current = current.cause) {
    if (current.message.includes(GUARD_FAILED)) return true;
  }
  return false;
}

/**
 * The atomic units on a batch-only driver (Cloudflare D1): each is one batch, which the
 * database runs as one transaction, alone. A precondition is a guard first in the batch.
 */
function batchUnits(batch: NonNullable<Executor["batch"]>) {
  const atomically = async (writes: Statement[], precondition?: Precondition) => {
    if (!precondition) {
      await batch(writes);
      return;
    }
    try {
      await batch([guard(precondition.rows), ...writes]);
    } catch (error) {
      throw guardFailed(error) ? precondition.failure() : error;
    }
  };
  return { atomically, guardFailed };
}

/**
 * The lock another connection held past the busy timeout (better-sqlite3 and libSQL
 * name it by SQLite's code): the unit's BEGIN IMMEDIATE failed, so nothing was written.
 */
export const isBusy = (error: unknown) =>
  [...errorChain(error)].some((e) => typeof e.code === "string" && e.code.startsWith("SQLITE_BUSY"));

export function sqliteDialect(executor: Executor, tables: SQLiteCheckpointTables): Dialect {
  const { checkpoints, checkpointBlobs, checkpointWrites, checkpointThreads } = tables;
  const columns = {
    checkpoints: { table: checkpoints, ...checkpoints, nsKey: checkpoints.checkpointNs },
    blobs: { table: checkpointBlobs, ...checkpointBlobs, nsKey: checkpointBlobs.checkpointNs },
    writes: { table: checkpointWrites, ...checkpointWrites, nsKey: checkpointWrites.checkpointNs },
    threads: { table: checkpointThreads, ...checkpointThreads },
  };
  const threadSql: ThreadSqlParts = {
    now: sql`cast(unixepoch('subsec') * 1000 as integer)`,
    greatest: "max",
    json: (value) => sql`${value}`,
    rootNsKey: "",
  };

  const batch = executor.batch?.bind(executor);
  const batched = batch && batchUnits(batch);

  return {
    name: "sqlite",
    columns,
    executor,
    query: (statement) => executor.all(statement),
    atomically: (writes, precondition) =>
      retryOnConflict(isBusy, async () => {
        if (batched) return batched.atomically(writes, precondition);
        // The executor's transactions take the write lock up front (BEGIN IMMEDIATE),
        // which already keeps deletes out until commit.
        if (executor.transactionGrouped) {
          await executor.transactionGrouped((tx) => {
            if (precondition && tx.all(precondition.rows).length === 0) throw precondition.failure();
            for (const write of writes) tx.run(write);
          });
          return;
        }
        await executor.transaction(async (tx) => {
          if (precondition && (await tx.all(precondition.rows)).length === 0) throw precondition.failure();
          for (const write of writes) await tx.run(write);
        });
      }),
    atomicallyUntilSettled: (writes, unit) =>
      retryOnConflict(isBusy, async () => {
        // Batch-only: one batch. The rounds below are for a put that committed while the
        // deletes ran (elsewhere: one that held a lock they waited for). A D1 database runs
        // its batches and statements one at a time, each batch's statements in one go as one
        // transaction, so none commits in between: once the batch is done, every row of the
        // thread is gone and a second round would change nothing. A put landing later finds
        // its parent gone (its guard fails) or starts the thread anew, as after a settled delete.
        if (batched) {
          await batched.atomically([...writes, ...(unit?.after ?? [])], unit?.precondition);
          return;
        }
        // The transaction holds the write lock: the precondition's rows need no lock of their own.
        await executor.transaction((tx) => settleIn(tx, writes, unit, (precondition) => precondition.rows));
      }),
    threadPut: (values) => [onConflictThreadPut(columns.threads, columns.checkpoints, threadSql, values)],
    // 'now' changes between statements of a transaction: the checkpoint takes the row's time.
    putTime: (threadId) =>
      sql`(select ${checkpointThreads.updatedAt} from ${checkpointThreads} where ${checkpointThreads.threadId} = ${threadId})`,
    // The transaction holds the database's write lock: no put runs meanwhile, and no row
    // is ever held by another transaction, so there is nothing to skip.
    // A batch runs alone as well.
    refreshThread: async (threadId) => {
      const statements = [
        onConflictThreadRefresh(columns.threads, columns.checkpoints, threadSql, threadId),
        deleteEmptyThread(columns.threads, columns.checkpoints, threadId),
      ];
      if (batch) {
        await batch(statements);
        return;
      }
      await retryOnConflict(isBusy, () =>
        executor.transaction(async (tx) => {
          for (const statement of statements) await tx.run(statement);
        }),
      );
    },
    insert: onConflictInsert,
    nsKey: (namespace) => namespace,
    jsonParam: (json) => sql`${json}`,
    metadataMatches(entries, table = "checkpoints") {
      const ops = jsonEachOps();
      if (table === "threads") {
        const root = { value: sql`${checkpointThreads.metadata}` };
        return allOf(
          entries.flatMap(([key, value]) => [
            // The generated, indexed column narrows the scan; the json_each test is exact.
            ...(key === "user_id" && typeof value === "string"
              ? [sql`${checkpointThreads.metaUserId} = ${value}`]
              : []),
            ops.member(root, key, (child) => jsonEquals(ops, child, value)),
          ]),
        );
      }
      const root = { value: sql`${checkpoints.metadata}` };
      const parts: SQL[] = [];
      for (const [key, value] of entries) {
        // The generated, indexed columns narrow the scan; the json_each test is exact.
        if (key === "source" && typeof value === "string") {
          parts.push(sql`${checkpoints.metaSource} = ${value}`);
          // The partial index's own condition, as text: what lets the planner use it.
          if (value !== UNINDEXED_SOURCE)
            parts.push(sql`${checkpoints.metaSource} <> ${sql.raw(`'${UNINDEXED_SOURCE}'`)}`);
        }
        if (key === "step" && typeof value === "number") parts.push(sql`${checkpoints.metaStep} = ${value}`);
        if (key === "run_id" && typeof value === "string") {
          parts.push(sql`${checkpoints.metaRunId} = ${value}`);
        }
        parts.push(ops.member(root, key, (child) => jsonEquals(ops, child, value)));
      }
      return allOf(parts);
    },
    // cast: json_each returns numbers as numbers, which never equal a text column.
    // Reals as JavaScript prints them (as channel versions are stored): SQLite's own text
    // form may carry 17 digits where 15 round-trip (20.056774307583 -> 20.056774307583002).
    jsonField: (document, key) => sql`(select case
        when type = 'real' and cast(printf('%.15g', value) as real) = value then printf('%.15g', value)
        else cast(value as text) end
      from json_each(${document}) where key = ${key})`,
    // A synchronous driver has no round trip to save: the bases' own statement, sent only
    // for a page with deltas, costs less than this branch in every page's blob statement.
    chainBaseBlobs:
      executor.transactions === "sync"
        ? undefined
        : (head) =>
            chainBaseBlobs(columns.blobs, head, {
              versions: (deltaChain) => ({
                from: sql`json_each(${deltaChain}, '$.bases') as chain_base`,
                version: sql.raw("chain_base.value"),
              }),
              lookup: "join",
            }),
    millisAgo: (ms) => sql`(${threadSql.now} - ${ms})`,
    epochMillis: (ms) => sql`${ms}`,
    createdAtMillis: (createdAt) => createdAt,
    async tableStats() {
      const stats = [];
      for (const table of [checkpoints, checkpointBlobs, checkpointWrites]) {
        const name = getTableName(table);
        const [row] = await executor
          .all(sql`select (select count(*) from ${table}) as rows,
          (select coalesce(sum(pgsize), 0) from dbstat where name = ${name}
             or name in (select name from sqlite_master where type = 'index' and tbl_name = ${name})) as bytes`)
          .catch((error) => {
            if (!/no such table: dbstat/.test(String(error))) throw error;
            throw new UnsupportedDriverError(
              `storageStats needs SQLite's dbstat table, which ${executor.driver} does not offer`,
              { cause: error },
            );
          });
        stats.push({ table: name, rows: Number(row.rows), bytes: Number(row.bytes) });
      }
      return stats;
    },
    migrationsTable: async ({ migrationsTable }) => sql`${sql.identifier(migrationsTable)}`,
    async migrationsTableExists({ migrationsTable }) {
      const found = await executor.all(
        sql`select 1 from sqlite_master where type = 'table' and name = ${migrationsTable}`,
      );
      return found.length > 0;
    },
    tablesNamed: (names) =>
      sql`select name from sqlite_master where type = 'table' and name in (${sql.join(
        names.map((name) => sql`${name}`),
        sql`, `,
      )})`,
    foreignTables: {
      officialMarker: { table: "writes", saver: "@langchain/langgraph-checkpoint-sqlite" },
      location: "the database",
      elsewhere: "or use another database.",
    },
    createMigrationsTable: (table) =>
      sql`create table if not exists ${table} (id integer primary key autoincrement, hash text not null, created_at numeric)`,
    // The executor's transaction holds the database's write lock already.
    lockMigrations: async () => async () => {},
    ...(batched && {
      // Batch-only: the loop reads on the database itself, and each migration is one batch
      // (its statements and its record) guarded by its not being recorded yet, which a
      // concurrent setup() may have done meanwhile: then it is left as that one applied it.
      migrationRun: (work) => work(executor),
      async applyMigration(_tx, table, migration) {
        const notRecorded = sql`select 1 where not exists (select 1 from ${table} where created_at = ${migration.folderMillis})`;
        try {
          await batch([
            guard(notRecorded),
            ...migration.sql.filter((statement) => statement.trim()).map((statement) => sql.raw(statement)),
            sql`insert into ${table} (hash, created_at) values (${migration.hash}, ${migration.folderMillis})`,
          ]);
          return true;
        } catch (error) {
          if (!batched.guardFailed(error)) throw error;
          return false;
        }
      },
    }),
  };
}
