/**
 * The SQLite dialect (better-sqlite3, libSQL, Cloudflare D1): metadata filters through
 * json_each and the generated columns' indexes; its write units are in sqlite-units.ts,
 * its migrations table in sqlite-migrations.ts.
 */
import { getTableName, type SQL, sql } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import { UnsupportedDriverError } from "../errors.js";
import { type SQLiteCheckpointTables, UNINDEXED_SOURCE } from "../schema/sqlite.js";
import type { Executor } from "../sql/executor.js";
import { allOf } from "../sql/statements.js";
import { chainBaseBlobs, onConflictInsert } from "./common-sql.js";
import type { Dialect } from "./dialect.js";
import { type JsonKind, type JsonNodeOps, jsonEquals } from "./json-equality.js";
import { sqliteMigrationParts } from "./sqlite-migrations.js";
import { sqliteWriteUnits } from "./sqlite-units.js";
import { onConflictThreadPut, type ThreadSqlParts } from "./thread-sql.js";

/** SQLite's JSON functions refuse text nested deeper than this ("malformed JSON"). */
export const SQLITE_JSON_DEPTH = 1000;

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
    maxJsonDepth: SQLITE_JSON_DEPTH,
    columns,
    executor,
    query: (statement) => executor.all(statement),
    ...sqliteWriteUnits(executor, columns.threads, columns.checkpoints, threadSql),
    threadPut: (values) => [onConflictThreadPut(columns.threads, columns.checkpoints, threadSql, values)],
    // 'now' changes between statements of a transaction: the checkpoint takes the row's time.
    putTime: (threadId) =>
      sql`(select ${checkpointThreads.updatedAt} from ${checkpointThreads} where ${checkpointThreads.threadId} = ${threadId})`,
    insert: onConflictInsert,
    nsKey: (namespace) => namespace,
    jsonParam: (json) => sql`${json}`,
    metadataMatches: sqliteMetadataMatches(tables),
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
    tableStats: () => sqliteTableStats(executor, [checkpoints, checkpointBlobs, checkpointWrites]),
    ...sqliteMigrationParts(executor),
  };
}

/**
 * The metadata of a checkpoint (or thread row) has every entry: json_each tests, exact,
 * with the generated, indexed columns' equalities beside them to narrow the scan.
 */
function sqliteMetadataMatches({ checkpoints, checkpointThreads }: SQLiteCheckpointTables): Dialect["metadataMatches"] {
  return (entries, table = "checkpoints") => {
    const ops = jsonEachOps();
    if (table === "threads") {
      const root = { value: sql`${checkpointThreads.metadata}` };
      return allOf(
        entries.flatMap(([key, value]) => [
          // The generated, indexed column narrows the scan; the json_each test is exact.
          ...(key === "user_id" && typeof value === "string" ? [sql`${checkpointThreads.metaUserId} = ${value}`] : []),
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
  };
}

/** Rows and bytes of each table and its indexes (SQLite's dbstat). */
async function sqliteTableStats(executor: Executor, tables: SQLiteTable[]) {
  const stats = [];
  for (const table of tables) {
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
}
