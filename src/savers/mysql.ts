import { createHash } from "node:crypto";
import { type Column, getTableName, is, Placeholder, type SQL, sql } from "drizzle-orm";
import type { MySqlDatabase, MySqlQueryResultHKT, PreparedQueryHKTBase } from "drizzle-orm/mysql-core";
import { InvalidInputError } from "../errors.js";
import type { MySqlCheckpointTables } from "../schema/mysql.js";
import { insertValues, retryOnDeadlock } from "./common-sql.js";
import type { Dialect, InsertSpec, Row } from "./dialect.js";
import { type JsonKind, type JsonNodeOps, jsonEquals } from "./json-equality.js";
import { applying, pendingMigrations } from "./migrations.js";
import { type CompiledQuery, type Statement, StatementCompiler } from "./statements.js";

/** The slice of drizzle's MySQL session used to run compiled text. */
interface Session {
  prepareQuery(query: CompiledQuery, fields: undefined): { execute(): Promise<unknown> };
}

// biome-ignore lint/suspicious/noExplicitAny: drizzle's schema parameter is invariant; any schema is accepted.
export type AnyMySqlDatabase = MySqlDatabase<MySqlQueryResultHKT, PreparedQueryHKTBase, any>;

const KINDS: Record<JsonKind, string> = {
  string: "'STRING'",
  number: "'INTEGER', 'UNSIGNED INTEGER', 'DOUBLE', 'DECIMAL'",
  boolean: "'BOOLEAN'",
  null: "'NULL'",
  object: "'OBJECT'",
  array: "'ARRAY'",
};

/**
 * A node is a JSON path into the metadata, built here and bound as a parameter.
 * Keys are written as JSON strings ($."a.b"), which MySQL and MariaDB both read
 * with escapes, so any key is just a key. Only SQL both servers accept: no ->>,
 * no CAST(... AS JSON), no JSON_EQUALS.
 */
function jsonPathOps(document: SQL): JsonNodeOps<string> {
  const at = (path: string) => sql`json_extract(${document}, ${path})`;
  return {
    member: (parent, key, test) =>
      test(typeof key === "number" ? `${parent}[${key}]` : `${parent}.${JSON.stringify(key)}`),
    is: (path, kind) => sql`json_type(${at(path)}) in (${sql.raw(KINDS[kind])})`,
    // Byte comparison: the connection's default collation ignores case and trailing spaces.
    stringEquals: (path, value) => sql`cast(json_unquote(${at(path)}) as binary) = cast(${value} as binary)`,
    numberEquals: (path, value) => sql`${at(path)} + 0 = ${value}`,
    booleanEquals: (path, value) => sql`json_unquote(${at(path)}) = ${value ? "true" : "false"}`,
    size: (path) => sql`json_length(${document}, ${path})`,
  };
}

/** Result columns of the saver's queries that hold bytes; all others hold text. */
const PAYLOAD_COLUMNS = new Set(["checkpoint", "blob", "data", "ns_key"]);

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

export function mysqlDialect(db: AnyMySqlDatabase, tables: MySqlCheckpointTables): Dialect {
  const { checkpoints, checkpointBlobs, checkpointWrites } = tables;
  const columns = {
    checkpoints: { table: checkpoints, ...checkpoints, nsKey: checkpoints.nsHash },
    blobs: { table: checkpointBlobs, ...checkpointBlobs, nsKey: checkpointBlobs.nsHash },
    writes: { table: checkpointWrites, ...checkpointWrites, nsKey: checkpointWrites.nsHash },
  };

  const internals = db as unknown as {
    dialect: { sqlToQuery(statement: SQL): CompiledQuery };
    session: Session;
  };
  const compiler = new StatementCompiler(
    (statement) => internals.dialect.sqlToQuery(statement),
    (name, values) => sha256(values[name.slice(0, name.indexOf("#"))]),
  );
  const hashed: HashedColumns = new Map<Column, Column>([
    [checkpoints.checkpointNs, checkpoints.nsHash],
    [checkpointBlobs.checkpointNs, checkpointBlobs.nsHash],
    [checkpointWrites.checkpointNs, checkpointWrites.nsHash],
    [checkpointWrites.taskId, checkpointWrites.taskHash],
  ]);

  /** Runs compiled text through drizzle's session: its logger and type casts apply. */
  const runOn = (session: Session) => async (query: CompiledQuery) => {
    const [result] = (await session.prepareQuery(query, undefined).execute()) as [Row[]];
    return result;
  };
  const run = runOn(internals.session);

  // mysql2 sends bytes as hex text, so a statement is about twice its binary values:
  // say so clearly instead of letting the server drop the connection mid-write.
  let maxPacket: Promise<number> | undefined;
  async function checkPacketSize(queries: CompiledQuery[]): Promise<void> {
    const size = queries
      .flatMap((query) => query.params)
      .reduce((total: number, param) => total + (Buffer.isBuffer(param) ? 2 * param.length : String(param).length), 0);
    if (size < 1024 * 1024) return;
    maxPacket ??= query(sql`select @@max_allowed_packet as packet`).then(([row]) => Number(row.packet));
    const limit = await maxPacket;
    if (size > limit) {
      throw new InvalidInputError(
        `this write needs a MySQL packet of about ${size} bytes, more than the server's max_allowed_packet (${limit}): raise max_allowed_packet`,
      );
    }
  }

  async function query(statement: Statement): Promise<Row[]> {
    const rows = await run(compiler.compile(statement));
    // Ids are VARBINARY (see the schema) and come back as bytes, also where a UNION
    // merges them with text into a BLOB type: every result column but the payloads is text.
    for (const row of rows) {
      for (const [name, value] of Object.entries(row)) {
        if (Buffer.isBuffer(value) && !PAYLOAD_COLUMNS.has(name)) row[name] = value.toString("utf8");
      }
    }
    return rows;
  }

  /**
   * A transaction that keeps the statement's own error when the server dropped the
   * connection (drizzle's failed ROLLBACK would hide it), run again when InnoDB chose
   * it as a deadlock victim (rolled back whole).
   */
  function transaction(work: (run: (query: CompiledQuery) => Promise<Row[]>) => Promise<void>): Promise<void> {
    return retryOnDeadlock(
      (error) =>
        [error, (error as { cause?: unknown } | null)?.cause].some(
          (e) => (e as { errno?: unknown } | null)?.errno === 1213,
        ),
      async () => {
        let failure: unknown;
        try {
          await db.transaction((tx) => {
            const runInTransaction = runOn((tx as unknown as { session: Session }).session);
            return work(async (query) => {
              try {
                return await runInTransaction(query);
              } catch (error) {
                failure = error;
                throw error;
              }
            });
          });
        } catch (error) {
          throw failure ?? error;
        }
      },
    );
  }

  return {
    name: "mysql",
    columns,
    query,
    async atomically(statements, precondition) {
      const queries = statements.map((statement) => compiler.compile(statement));
      await checkPacketSize(queries);
      if (!precondition && queries.length === 1) {
        await run(queries[0]);
        return;
      }
      await transaction(async (runInTransaction) => {
        if (precondition) {
          const rows = compiler.compile(precondition.rows);
          const locked = await runInTransaction({ sql: `${rows.sql} lock in share mode`, params: rows.params });
          if (locked.length === 0) throw precondition.failure();
        }
        for (const query of queries) await runInTransaction(query);
      });
    },
    async atomicallyUntilSettled(statements) {
      const queries = statements.map((statement) => compiler.compile(statement));
      await transaction(async (runInTransaction) => {
        let changed: number;
        do {
          changed = 0;
          for (const query of queries) {
            changed += Number(((await runInTransaction(query)) as { affectedRows?: number }).affectedRows ?? 0);
          }
        } while (changed > 0);
      });
    },
    insert: (spec) => insertSql(hashed, spec),
    nsKey: sha256,
    jsonParam: (json) => sql`${json}`,
    metadataMatches(entries) {
      const ops = jsonPathOps(sql`${checkpoints.metadata}`);
      const parts: SQL[] = [];
      for (const [key, value] of entries) {
        // The generated, indexed columns narrow the scan; the path test is exact.
        if (key === "source" && typeof value === "string" && [...value].length <= 64) {
          parts.push(sql`${checkpoints.metaSource} = ${value}`);
        }
        if (key === "step" && typeof value === "number") parts.push(sql`${checkpoints.metaStep} = ${value}`);
        if (key === "run_id" && typeof value === "string" && [...value].length <= 255) {
          parts.push(sql`${checkpoints.metaRunId} = ${value}`);
        }
        parts.push(ops.member("$", key, (path) => jsonEquals(ops, path, value)));
      }
      return sql`(${sql.join(parts, sql` and `)})`;
    },
    jsonField: (document, key) => sql`json_unquote(json_extract(${document}, ${`$.${JSON.stringify(key)}`}))`,
    // MySQL and MariaDB skip through the index themselves ("Using index for group-by");
    // a recursive CTE cannot seek there and reads whole index partitions instead.
    threadActivity: (cursor, idleBefore, limit) => sql`
      select ${checkpoints.threadId} as ${sql.identifier("thread_id")},
        case when max(${checkpoints.createdAt}) < ${idleBefore} then 1 else 0 end as ${sql.identifier("idle")}
      from ${checkpoints} where ${checkpoints.threadId} > ${cursor}
      group by ${checkpoints.threadId} order by ${checkpoints.threadId} limit ${sql.raw(String(limit))}`,
    epochMillis: (ms) => sql`from_unixtime(${ms} / 1000)`,
    readTimestamp: (value) => (value instanceof Date ? value : new Date(String(value))),
    async tableStats() {
      return Promise.all(
        [checkpoints, checkpointBlobs, checkpointWrites].map(async (table) => {
          const [[row]] = (await db.execute(
            sql`select (select count(*) from ${table}) as \`rows\`,
              (select coalesce(sum(data_length + index_length), 0) from information_schema.tables
               where table_schema = database() and table_name = ${getTableName(table)}) as bytes`,
          )) as unknown as [[Row]];
          return { table: getTableName(table), rows: Number(row.rows), bytes: Number(row.bytes) };
        }),
      );
    },
    async appliedMigrations({ migrationsTable }) {
      const [found] = (await db.execute(
        sql`select 1 from information_schema.tables where table_schema = database() and table_name = ${migrationsTable}`,
      )) as unknown as [Row[]];
      if (found.length === 0) return [];
      const rows = await query(sql`select created_at from ${sql.identifier(migrationsTable)}`);
      return rows.map((row) => Number(row.created_at));
    },
    async migrate({ migrationsFolder, migrationsTable }) {
      const table = sql.identifier(migrationsTable);
      const lock = `langgraph-checkpoint-drizzle:${migrationsTable}`;
      // A transaction pins one connection, which GET_LOCK needs; MySQL DDL commits
      // implicitly, so each migration is recorded right after its statements.
      const applied: number[] = [];
      await db.transaction(async (tx) => {
        const [[acquired]] = (await tx.execute(sql`select get_lock(${lock}, 300) as acquired`)) as unknown as [[Row]];
        if (Number(acquired.acquired) !== 1) throw new Error(`could not take the migration lock "${lock}"`);
        try {
          await tx.execute(
            sql`create table if not exists ${table} (id serial primary key, hash text not null, created_at bigint)`,
          );
          const [recorded] = (await tx.execute(sql`select created_at from ${table}`)) as unknown as [Row[]];
          for (const migration of pendingMigrations(
            migrationsFolder,
            recorded.map((row) => row.created_at),
          )) {
            await applying(migration, async () => {
              for (const statement of migration.sql) if (statement.trim()) await tx.execute(sql.raw(statement));
            });
            await tx.execute(
              sql`insert into ${table} (hash, created_at) values (${migration.hash}, ${migration.folderMillis})`,
            );
            applied.push(migration.folderMillis);
          }
        } finally {
          await tx.execute(sql`select release_lock(${lock})`);
        }
      });
      return applied;
    },
  };
}
