/**
 * The MySQL and MariaDB dialect: namespaces and task ids keyed by their SHA-256, metadata
 * filters through JSON paths both servers accept; its write units run as mysql-units.ts
 * says (one compound statement on MariaDB).
 */
import { createHash } from "node:crypto";
import { type Column, getTableName, is, Placeholder, type SQL, sql } from "drizzle-orm";
import type { MySqlTable } from "drizzle-orm/mysql-core";
import type { MySqlCheckpointTables } from "../schema/mysql.js";
import type { Executor, Runner } from "../sql/executor.js";
import { allOf, type Statement } from "../sql/statements.js";
import { insertValues } from "./common-sql.js";
import type { Dialect, InsertSpec, Row } from "./dialect.js";
import { type JsonKind, type JsonNodeOps, jsonEquals } from "./json-equality.js";
import { indexedMetadataCandidates } from "./mysql-metadata-index.js";
import { mysqlMigrationSteps } from "./mysql-migrations.js";
import { type MySqlUnitOptions, mysqlUnits } from "./mysql-units.js";
import {
  deleteEmptyThread,
  lockThreadRow,
  mysqlThreadLock,
  mysqlThreadPut,
  mysqlThreadRefresh,
  type ThreadSqlParts,
} from "./thread-sql.js";

/**
 * MariaDB's JSON columns (their json_valid check) refuse a document nested 32 levels
 * deep; MySQL's allow 100. The lower one, so a document fits both.
 */
export const MARIADB_JSON_DEPTH = 31;

const KINDS: Record<JsonKind, string> = {
  string: "'STRING'",
  number: "'INTEGER', 'UNSIGNED INTEGER', 'DOUBLE', 'DECIMAL'",
  boolean: "'BOOLEAN'",
  null: "'NULL'",
  object: "'OBJECT'",
  array: "'ARRAY'",
};

/**
 * A JSON path argument, sent as bytes. As text it would carry the connection's
 * collation, under which different keys can compare equal (utf8mb4_general_ci weighs
 * every character outside the BMP the same): MariaDB's optimizer then took
 * json_extract(m, '$."😀"') and json_extract(m, '$."😁"') for one expression and
 * found `x + 0 = -1 and x + 0 = 2` unsatisfiable, so the filter matched nothing.
 */
const jsonPath = (path: string) => sql`convert(${Buffer.from(path, "utf8")} using utf8mb4)`;

/**
 * A JSON object's member as text, found by its name without a path: MariaDB's JSON
 * paths cannot name a key starting with "-", even quoted (json_extract gives null),
 * which channel names may do. `$.*` lists the values in the order json_keys lists the keys.
 */
function memberByName(document: SQL, key: string): SQL {
  return sql`(select json_unquote(json_extract(json_extract(${document}, ${jsonPath("$.*")}), concat('$[', member.i - 1, ']')))
    from json_table(json_keys(${document}), '$[*]' columns (i for ordinality, name varchar(1024) character set utf8mb4 path '$')) as member
    where cast(member.name as binary) = ${Buffer.from(key, "utf8")})`;
}

/**
 * A node is a JSON path into the metadata, built here and bound as a parameter.
 * Keys are written as JSON strings ($."a.b"), which MySQL and MariaDB both read
 * with escapes, so any key is just a key. Only SQL both servers accept: no ->>,
 * no CAST(... AS JSON), no JSON_EQUALS.
 */
function jsonPathOps(document: SQL): JsonNodeOps<string> {
  const at = (path: string) => sql`json_extract(${document}, ${jsonPath(path)})`;
  return {
    member: (parent, key, test) =>
      test(typeof key === "number" ? `${parent}[${key}]` : `${parent}.${JSON.stringify(key)}`),
    is: (path, kind) => sql`json_type(${at(path)}) in (${sql.raw(KINDS[kind])})`,
    // Byte comparison: the connection's default collation ignores case and trailing spaces.
    stringEquals: (path, value) => sql`cast(json_unquote(${at(path)}) as binary) = cast(${value} as binary)`,
    numberEquals: (path, value) => sql`${at(path)} + 0 = ${value}`,
    booleanEquals: (path, value) => sql`json_unquote(${at(path)}) = ${value ? "true" : "false"}`,
    size: (path) => sql`json_length(${document}, ${jsonPath(path)})`,
  };
}

/** Result columns of the saver's queries that hold bytes; all others hold text. */
const PAYLOAD_COLUMNS = new Set(["checkpoint", "blob", "data", "ns_key"]);

/** Values derived from a template's placeholders: "<name>#sha256" is the hash of "<name>". */
export function deriveMySqlValue(name: string, values: Record<string, unknown>): unknown {
  return sha256(values[name.slice(0, name.indexOf("#"))]);
}

function sha256(text: unknown): Buffer {
  return createHash("sha256").update(String(text), "utf8").digest();
}

/** Text columns whose SHA-256 is kept in a key column beside them. */
type HashedColumns = Map<Column, Column>;

function insertSql(hashed: HashedColumns, { table, columns: given, rows: givenRows, update }: InsertSpec): SQL {
  const extra = given.flatMap((column, i) => {
    const hashColumn = hashed.get(column);
    return hashColumn ? [{ hashColumn, from: i }] : [];
  });
  const columns = [...given, ...extra.map((e) => e.hashColumn)];
  // In a template the hash is a placeholder of its own, derived from the value's (see the compiler).
  const hashOf = (value: unknown) => (is(value, Placeholder) ? sql.placeholder(`${value.name}#sha256`) : sha256(value));
  const rows = givenRows.map((row) => [...row, ...extra.map((e) => hashOf(row[e.from]))]);
  // Not INSERT IGNORE: it would also turn real errors (data too long) into warnings.
  const keep = sql`${sql.identifier(columns[0].name)} = ${sql.identifier(columns[0].name)}`;
  const assignments =
    update.length === 0
      ? keep
      : sql.join(
          update.map((column) => sql`${sql.identifier(column.name)} = values(${sql.identifier(column.name)})`),
          sql`, `,
        );
  return sql`${insertValues(table, columns, rows)} on duplicate key update ${assignments}`;
}

/**
 * Rows of a statement. Ids are VARBINARY (see the schema) and come back as bytes, also where
 * a UNION merges them with text into a BLOB type: every result column but the payloads is text.
 */
async function queryRows(runner: Runner, statement: Statement): Promise<Row[]> {
  const rows = await runner.all(statement);
  for (const row of rows) {
    for (const [name, value] of Object.entries(row)) {
      if (Buffer.isBuffer(value) && !PAYLOAD_COLUMNS.has(name)) row[name] = value.toString("utf8");
    }
  }
  return rows;
}

export function mysqlDialect(
  executor: Executor,
  tables: MySqlCheckpointTables,
  options: MySqlUnitOptions = {},
): Dialect {
  const { checkpoints, checkpointBlobs, checkpointWrites, checkpointThreads } = tables;
  const columns = {
    checkpoints: { table: checkpoints, ...checkpoints, nsKey: checkpoints.nsHash },
    blobs: { table: checkpointBlobs, ...checkpointBlobs, nsKey: checkpointBlobs.nsHash },
    writes: { table: checkpointWrites, ...checkpointWrites, nsKey: checkpointWrites.nsHash },
    threads: { table: checkpointThreads, ...checkpointThreads },
  };
  const threadSql: ThreadSqlParts = {
    now: sql`(timestampdiff(microsecond, '1970-01-01 00:00:00', utc_timestamp(3)) div 1000)`,
    greatest: "greatest",
    json: (value) => sql`${value}`,
    rootNsKey: sha256(""),
  };

  const hashed: HashedColumns = new Map<Column, Column>([
    [checkpoints.checkpointNs, checkpoints.nsHash],
    [checkpointBlobs.checkpointNs, checkpointBlobs.nsHash],
    [checkpointWrites.checkpointNs, checkpointWrites.nsHash],
    [checkpointWrites.taskId, checkpointWrites.taskHash],
  ]);
  const query = (statement: Statement, runner: Runner = executor) => queryRows(runner, statement);
  const units = mysqlUnits(executor, query, checkpoints, options);

  return {
    name: "mysql",
    maxJsonDepth: MARIADB_JSON_DEPTH,
    columns,
    executor,
    query: (statement) => query(statement),
    atomically: units.atomically,
    atomicallyUntilSettled: units.atomicallyUntilSettled,
    atomicallyReading: units.atomicallyReading,
    threadPut: (values) => [
      mysqlThreadLock(columns.threads, threadSql, values),
      mysqlThreadPut(columns.threads, columns.checkpoints, threadSql, values),
    ],
    // UTC_TIMESTAMP changes between statements of a transaction: the checkpoint takes the row's time.
    putTime: (threadId) =>
      sql`(select ${checkpointThreads.updatedAt} from ${checkpointThreads} where ${checkpointThreads.threadId} = ${threadId})`,
    refreshThread: (threadId) =>
      units.transaction(async (tx) => {
        // Its lock waits for a put in progress; INSERT ... SELECT then reads the newest rows.
        await tx.all(lockThreadRow(columns.threads, threadId));
        await tx.run(mysqlThreadRefresh(columns.threads, columns.checkpoints, threadSql, threadId));
        await tx.run(deleteEmptyThread(columns.threads, columns.checkpoints, threadId));
      }),
    insert: (spec) => insertSql(hashed, spec),
    nsKey: sha256,
    jsonParam: (json) => sql`${json}`,
    metadataMatches: mysqlMetadataMatches(tables),
    newestCheckpoint: (thread, nsKey) => {
      const c = columns.checkpoints;
      return sql`${c.checkpointId} = (select max(${c.checkpointId}) from ${c.table} where ${c.threadId} = ${thread} and ${c.nsKey} = ${nsKey})`;
    },
    jsonField: (document, key) =>
      key.startsWith("-")
        ? memberByName(document, key)
        : sql`json_unquote(json_extract(${document}, ${jsonPath(`$.${JSON.stringify(key)}`)}))`,
    millisAgo: (ms) => sql`(${threadSql.now} - ${ms})`,
    // created_at holds milliseconds since the epoch (see the schema).
    epochMillis: (ms) => sql`${ms}`,
    createdAtMillis: (createdAt) => createdAt,
    tableStats: () => mysqlTableStats(executor, [checkpoints, checkpointBlobs, checkpointWrites]),
    ...mysqlMigrationSteps(executor),
  };
}

/**
 * The metadata of a checkpoint (or thread row) has every entry: JSON path tests, exact,
 * after the generated columns' and the side table's narrowing predicates (tables given
 * without the side table, recipe A, filter other keys without it).
 */
function mysqlMetadataMatches({
  checkpoints,
  checkpointThreads,
  checkpointMetadata,
}: MySqlCheckpointTables): Dialect["metadataMatches"] {
  return (entries, table = "checkpoints") => {
    if (table === "threads") {
      const ops = jsonPathOps(sql`${checkpointThreads.metadata}`);
      return allOf(
        entries.flatMap(([key, value]) => [
          // The generated, indexed column narrows the scan; the path test is exact.
          ...(key === "user_id" && typeof value === "string" && [...value].length <= 255
            ? [sql`${checkpointThreads.metaUserId} = ${value}`]
            : []),
          ops.member("$", key, (path) => jsonEquals(ops, path, value)),
        ]),
      );
    }
    const ops = jsonPathOps(sql`${checkpoints.metadata}`);
    // Narrowing predicates (generated columns, the side table) come before the exact JSON
    // tests: MariaDB evaluates a row's conditions in order, so a candidate failing a cheap
    // column compare never pays for JSON parsing (500 candidates of a `user` were parsed
    // for 20 matches of `{ user, step }`).
    const parts: SQL[] = [];
    const exact: SQL[] = [];
    for (const [key, value] of entries) {
      // The generated, indexed columns narrow the scan; the path test is exact.
      if (key === "source" && typeof value === "string" && [...value].length <= 64) {
        parts.push(sql`${checkpoints.metaSource} = ${value}`);
      }
      if (key === "step" && typeof value === "number") parts.push(sql`${checkpoints.metaStep} = ${value}`);
      if (key === "run_id" && typeof value === "string" && [...value].length <= 255) {
        parts.push(sql`${checkpoints.metaRunId} = ${value}`);
      }
      // Any other key with a scalar value: its side-table index (see mysql-metadata-index.ts).
      const candidates =
        checkpointMetadata &&
        indexedMetadataCandidates(
          checkpointMetadata,
          { threadId: checkpoints.threadId, nsHash: checkpoints.nsHash, checkpointId: checkpoints.checkpointId },
          key,
          value,
        );
      if (candidates) parts.push(candidates);
      exact.push(ops.member("$", key, (path) => jsonEquals(ops, path, value)));
    }
    return allOf([...parts, ...exact]);
  };
}

/** Rows and bytes (data and indexes) of each table. */
function mysqlTableStats(executor: Executor, tables: MySqlTable[]) {
  return Promise.all(
    tables.map(async (table) => {
      const [row] = await executor.all(
        sql`select (select count(*) from ${table}) as \`rows\`,
          (select coalesce(sum(data_length + index_length), 0) from information_schema.tables
           where table_schema = database() and table_name = ${getTableName(table)}) as bytes`,
      );
      return { table: getTableName(table), rows: Number(row.rows), bytes: Number(row.bytes) };
    }),
  );
}
