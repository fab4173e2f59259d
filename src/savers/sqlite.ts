import { getTableName, type SQL, sql } from "drizzle-orm";
import type { BaseSQLiteDatabase } from "drizzle-orm/sqlite-core";
import type { SQLiteCheckpointTables } from "../schema/sqlite.js";
import { onConflictInsert, threadActivityBySkipScan } from "./common-sql.js";
import type { Dialect, Row } from "./dialect.js";
import { type JsonKind, type JsonNodeOps, jsonEquals } from "./json-equality.js";
import { applying, pendingMigrations } from "./migrations.js";
import { type CompiledQuery, LruCache, type Statement, StatementCompiler } from "./statements.js";

// biome-ignore lint/suspicious/noExplicitAny: drizzle's schema parameter is invariant; any schema is accepted.
export type AnySQLiteDatabase = BaseSQLiteDatabase<"sync", unknown, any>;

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

interface SqliteStatements {
  all(statement: Statement): Row[];
  /** Returns the number of rows changed. */
  run(statement: Statement): number;
}

/** The slice of drizzle's SQLite session used to run compiled text. */
interface SqliteSession {
  prepareQuery(
    query: CompiledQuery,
    fields: undefined,
    executeMethod: "all" | "run",
    arrayMode: boolean,
  ): { all(): unknown; run(): unknown };
  logger?: { logQuery(query: string, params: unknown[]): void };
}

/** The slice of a better-sqlite3 database the cached path uses. */
interface BetterSqliteDatabase {
  prepare(source: string): {
    all(...params: unknown[]): unknown[];
    run(...params: unknown[]): { changes: number };
  };
}

/**
 * drizzle compiles every statement afresh (`prepare` per call); the saver sends the
 * same few shapes again and again, so on better-sqlite3 it keeps them compiled (200
 * per connection). Other drivers run through drizzle's session. drizzle's logger sees them all.
 */
function sqliteStatements(db: AnySQLiteDatabase): SqliteStatements {
  const internals = db as unknown as {
    $client?: Partial<BetterSqliteDatabase>;
    dialect: { sqlToQuery(statement: SQL): CompiledQuery };
    session: SqliteSession;
  };
  const compiler = new StatementCompiler((statement) => internals.dialect.sqlToQuery(statement));
  const { session, $client: client } = internals;
  if (typeof client?.prepare !== "function") {
    return {
      all: (statement) => session.prepareQuery(compiler.compile(statement), undefined, "all", false).all() as Row[],
      run: (statement) =>
        (session.prepareQuery(compiler.compile(statement), undefined, "run", false).run() as { changes: number })
          .changes,
    };
  }
  const database = client as BetterSqliteDatabase;
  const prepared = new LruCache<ReturnType<BetterSqliteDatabase["prepare"]>>(200);
  function compiled(statement: Statement) {
    const query = compiler.compile(statement);
    session.logger?.logQuery(query.sql, query.params);
    return { compiledStatement: prepared.get(query.sql, () => database.prepare(query.sql)), params: query.params };
  }
  return {
    all(statement) {
      const { compiledStatement, params } = compiled(statement);
      return compiledStatement.all(...params) as Row[];
    },
    run(statement) {
      const { compiledStatement, params } = compiled(statement);
      return compiledStatement.run(...params).changes;
    },
  };
}

export function sqliteDialect(db: AnySQLiteDatabase, tables: SQLiteCheckpointTables): Dialect {
  const { checkpoints, checkpointBlobs, checkpointWrites } = tables;
  const columns = {
    checkpoints: { table: checkpoints, ...checkpoints, nsKey: checkpoints.checkpointNs },
    blobs: { table: checkpointBlobs, ...checkpointBlobs, nsKey: checkpointBlobs.checkpointNs },
    writes: { table: checkpointWrites, ...checkpointWrites, nsKey: checkpointWrites.checkpointNs },
  };

  /**
   * better-sqlite3 is synchronous, so a transaction that never awaits cannot
   * interleave with anything else on this connection. BEGIN IMMEDIATE takes the
   * write lock up front, so concurrent processes wait (busy_timeout) instead of
   * failing on a lock upgrade.
   */
  const statements = sqliteStatements(db);
  function transaction(work: () => void): void {
    statements.run(sql`begin immediate`);
    try {
      work();
      statements.run(sql`commit`);
    } catch (error) {
      statements.run(sql`rollback`);
      throw error;
    }
  }

  return {
    name: "sqlite",
    columns,
    async query(statement) {
      return statements.all(statement);
    },
    async atomically(writes, precondition) {
      transaction(() => {
        // The write lock taken by BEGIN IMMEDIATE already keeps deletes out until commit.
        if (precondition && statements.all(precondition.rows).length === 0) throw precondition.failure();
        for (const write of writes) statements.run(write);
      });
    },
    async atomicallyUntilSettled(writes) {
      transaction(() => {
        let changed: number;
        do {
          changed = 0;
          for (const write of writes) changed += statements.run(write);
        } while (changed > 0);
      });
    },
    insert: onConflictInsert,
    nsKey: (namespace) => namespace,
    jsonParam: (json) => sql`${json}`,
    metadataMatches(entries) {
      const ops = jsonEachOps();
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
      return sql`(${sql.join(parts, sql` and `)})`;
    },
    // cast: json_each returns numbers as numbers, which never equal a text column.
    jsonField: (document, key) => sql`(select cast(value as text) from json_each(${document}) where key = ${key})`,
    threadActivity: (cursor, idleBefore, limit) =>
      threadActivityBySkipScan(columns.checkpoints, cursor, idleBefore, limit),
    epochMillis: (ms) => sql`${ms}`,
    readTimestamp: (value) => new Date(Number(value)),
    async tableStats() {
      return [checkpoints, checkpointBlobs, checkpointWrites].map((table) => {
        const name = getTableName(table);
        const [row] = db.all<Row>(sql`select (select count(*) from ${table}) as rows,
          (select coalesce(sum(pgsize), 0) from dbstat where name = ${name}
             or name in (select name from sqlite_master where type = 'index' and tbl_name = ${name})) as bytes`);
        return { table: name, rows: Number(row.rows), bytes: Number(row.bytes) };
      });
    },
    async appliedMigrations({ migrationsTable }) {
      const found = db.all(sql`select 1 from sqlite_master where type = 'table' and name = ${migrationsTable}`);
      if (found.length === 0) return [];
      return db
        .all<Row>(sql`select created_at from ${sql.identifier(migrationsTable)}`)
        .map((row) => Number(row.created_at));
    },
    async migrate({ migrationsFolder, migrationsTable }) {
      const table = sql.identifier(migrationsTable);
      const applied: number[] = [];
      transaction(() => {
        db.run(
          sql`create table if not exists ${table} (id integer primary key autoincrement, hash text not null, created_at numeric)`,
        );
        const recorded = db.all<Row>(sql`select created_at from ${table}`);
        for (const migration of pendingMigrations(
          migrationsFolder,
          recorded.map((row) => row.created_at),
        )) {
          applying(migration, () => {
            for (const statement of migration.sql) if (statement.trim()) db.run(sql.raw(statement));
          });
          db.run(sql`insert into ${table} (hash, created_at) values (${migration.hash}, ${migration.folderMillis})`);
          applied.push(migration.folderMillis);
        }
      });
      return applied;
    },
  };
}
