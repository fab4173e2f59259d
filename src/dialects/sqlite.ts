import { getTableName, type SQL, sql } from "drizzle-orm";
import type { Executor } from "../drivers/executor.js";
import type { SQLiteCheckpointTables } from "../schema/sqlite.js";
import { onConflictInsert, threadActivityBySkipScan } from "./common-sql.js";
import type { Dialect } from "./dialect.js";
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

  return {
    name: "sqlite",
    columns,
    executor,
    query: (statement) => executor.all(statement),
    atomically: async (writes, precondition) => {
      // The executor's transactions take the write lock up front (BEGIN IMMEDIATE),
      // which already keeps deletes out until commit.
      const done = executor.transactionNow?.((tx) => {
        if (precondition && tx.all(precondition.rows).length === 0) throw precondition.failure();
        for (const write of writes) tx.run(write);
      });
      if (done) return;
      await executor.transaction(async (tx) => {
        if (precondition && (await tx.all(precondition.rows)).length === 0) throw precondition.failure();
        for (const write of writes) await tx.run(write);
      });
    },
    atomicallyUntilSettled: (writes) =>
      executor.transaction(async (tx) => {
        let changed: number;
        do {
          changed = 0;
          for (const write of writes) changed += await tx.run(write);
        } while (changed > 0);
      }),
    threadPut: (values) => [onConflictThreadPut(columns.threads, columns.checkpoints, threadSql, values)],
    // 'now' changes between statements of a transaction: the checkpoint takes the row's time.
    putTime: (threadId) =>
      sql`(select ${checkpointThreads.updatedAt} from ${checkpointThreads} where ${checkpointThreads.threadId} = ${threadId})`,
    // The transaction holds the database's write lock: no put runs meanwhile.
    refreshThread: (threadId) =>
      executor.transaction(async (tx) => {
        await tx.run(onConflictThreadRefresh(columns.threads, columns.checkpoints, threadSql, threadId));
        await tx.run(deleteEmptyThread(columns.threads, columns.checkpoints, threadId));
      }),
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
        if (key === "source" && typeof value === "string") parts.push(sql`${checkpoints.metaSource} = ${value}`);
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
    threadActivity: (cursor, idleBefore, limit) =>
      threadActivityBySkipScan(columns.checkpoints, cursor, idleBefore, limit),
    millisAgo: (ms) => sql`(${threadSql.now} - ${ms})`,
    epochMillis: (ms) => sql`${ms}`,
    createdAtMillis: (createdAt) => createdAt,
    async tableStats() {
      const stats = [];
      for (const table of [checkpoints, checkpointBlobs, checkpointWrites]) {
        const name = getTableName(table);
        const [row] = await executor.all(sql`select (select count(*) from ${table}) as rows,
          (select coalesce(sum(pgsize), 0) from dbstat where name = ${name}
             or name in (select name from sqlite_master where type = 'index' and tbl_name = ${name})) as bytes`);
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
  };
}
