import { getTableName, type SQL, sql } from "drizzle-orm";
import { getTableConfig, type PgDatabase, type PgQueryResultHKT, type PgTable } from "drizzle-orm/pg-core";
import type { PgCheckpointTables } from "../schema/pg.js";
import { onConflictInsert, retryOnDeadlock, threadActivityBySkipScan } from "./common-sql.js";
import type { Dialect, Row } from "./dialect.js";
import type { JsonValue } from "./metadata.js";
import { applying, lockNumber, pendingMigrations } from "./migrations.js";
import { type Bound, type CompiledQuery, isBound, LruCache, type Statement, StatementCompiler } from "./statements.js";

// biome-ignore lint/suspicious/noExplicitAny: drizzle's schema parameter is invariant; any schema is accepted.
export type AnyPgDatabase = PgDatabase<PgQueryResultHKT, any>;

/** Statements combined into one; more run in a transaction. */
const CTE_STATEMENTS = 8;

const quote = (identifier: string) => `"${identifier.replaceAll('"', '""')}"`;

function qualifiedName(table: PgTable): string {
  const { schema, name } = getTableConfig(table);
  return schema ? `${quote(schema)}.${quote(name)}` : quote(name);
}

async function currentSchema(db: AnyPgDatabase): Promise<string> {
  const [row] = rowsOf(await db.execute(sql`select current_schema() as schema`));
  if (typeof row?.schema !== "string")
    throw new Error("PostgreSQL has no current schema: set search_path or migrationsSchema");
  return row.schema;
}

function rowsOf(result: unknown): Row[] {
  // postgres.js returns the rows themselves; node-postgres wraps them in { rows }.
  const rows: unknown = Array.isArray(result) ? result : (result as { rows?: unknown } | undefined)?.rows;
  // Seen while connections were being killed: never read a partial answer as data.
  // Indexes, not some(): a result cut short can be a sparse array, whose holes some() skips.
  if (!Array.isArray(rows) || Array.from(rows).some((row) => row === null || typeof row !== "object")) {
    throw new Error("PostgreSQL connection lost: the driver returned an incomplete result");
  }
  return rows as Row[];
}

/** The server's SQLSTATE, also under drizzle's DrizzleQueryError wrapper. */
function errorCode(error: unknown): unknown {
  const { code, cause } = (error ?? {}) as { code?: unknown; cause?: unknown };
  return code ?? (cause === undefined ? undefined : errorCode(cause));
}

const isDeadlock = (error: unknown) => errorCode(error) === "40P01";

function changedRows(result: unknown): number {
  // postgres.js puts the count on the result array; node-postgres has rowCount.
  const { count, rowCount } = result as { count?: number; rowCount?: number };
  return Number(count ?? rowCount ?? 0);
}

type Execute = (statement: Statement) => Promise<unknown>;

/** The slice of drizzle's PostgreSQL session used to run compiled text. */
interface PgSession {
  prepareQuery(
    query: CompiledQuery,
    fields: undefined,
    name: undefined,
    arrayMode: boolean,
  ): { execute(): Promise<unknown> };
  logger?: { logQuery(query: string, params: unknown[]): void };
}

const sessionOf = (db: unknown) => (db as { session: PgSession }).session;

/** The slice of a postgres.js client the prepared path uses. */
interface PostgresJsClient {
  unsafe(query: string, params: unknown[], options: { prepare: boolean }): Promise<unknown>;
  begin<T>(work: (tx: PostgresJsClient) => Promise<T>): Promise<T>;
}

/**
 * Runs the saver's statements. drizzle's `execute` sends each one unprepared, which
 * costs postgres.js a describe round trip and the server a fresh parse and plan per
 * call; on a postgres.js client they go as named prepared statements instead, kept per
 * connection (a client created with `prepare: false`, as for PgBouncer, still wins).
 * Other drivers run them through drizzle's session. drizzle's logger sees them all.
 */
function pgExecutor(db: AnyPgDatabase): {
  execute: Execute;
  transaction<T>(work: (execute: Execute) => Promise<T>): Promise<T>;
} {
  const { dialect } = db as unknown as { dialect: { sqlToQuery(statement: SQL): CompiledQuery } };
  const compiler = new StatementCompiler((statement) => dialect.sqlToQuery(statement));
  const client = (db as unknown as { $client?: Partial<PostgresJsClient> }).$client;
  if (typeof client?.unsafe !== "function" || typeof client.begin !== "function") {
    const on =
      (target: unknown): Execute =>
      (statement) =>
        sessionOf(target).prepareQuery(compiler.compile(statement), undefined, undefined, false).execute();
    return { execute: on(db), transaction: (work) => db.transaction((tx) => work(on(tx))) };
  }
  const { logger } = sessionOf(db);
  const on =
    (target: PostgresJsClient): Execute =>
    (statement) => {
      const query = compiler.compile(statement);
      logger?.logQuery(query.sql, query.params);
      return target.unsafe(query.sql, query.params, { prepare: true });
    };
  const postgresJs = client as PostgresJsClient;
  return { execute: on(postgresJs), transaction: (work) => postgresJs.begin((tx) => work(on(tx))) };
}

/**
 * Statements combined into one SQL text by `build`. When every part is a template,
 * so is the result, made once per combination.
 */
function combiner(): (kind: string, parts: Statement[], build: (parts: SQL[]) => SQL) => Statement {
  const ids = new WeakMap<SQL, number>();
  const combined = new LruCache<SQL>(200);
  let nextId = 0;
  const idOf = (template: SQL) => {
    let id = ids.get(template);
    if (id === undefined) {
      id = nextId++;
      ids.set(template, id);
    }
    return id;
  };
  return (kind, parts, build) => {
    const sqls = parts.map((part) => (isBound(part) ? part.template : part));
    const values = Object.assign({}, ...parts.map((part) => (isBound(part) ? part.values : {})));
    if (!parts.every(isBound)) return { template: build(sqls), values };
    const key = `${kind}:${parts.map((part) => idOf((part as Bound).template)).join(",")}`;
    return { template: combined.get(key, () => build(sqls)), values };
  };
}

export function pgDialect(db: AnyPgDatabase, tables: PgCheckpointTables): Dialect {
  const { checkpoints, checkpointBlobs, checkpointWrites } = tables;
  const columns = {
    checkpoints: { table: checkpoints, ...checkpoints, nsKey: checkpoints.checkpointNs },
    blobs: { table: checkpointBlobs, ...checkpointBlobs, nsKey: checkpointBlobs.checkpointNs },
    writes: { table: checkpointWrites, ...checkpointWrites, nsKey: checkpointWrites.checkpointNs },
  };

  const { execute, transaction } = pgExecutor(db);
  const combine = combiner();

  return {
    name: "postgres",
    columns,
    async query(statement) {
      return rowsOf(await execute(statement));
    },
    atomically: (statements, precondition) =>
      retryOnDeadlock(isDeadlock, async () => {
        // A single statement is atomic on its own. Several independent data-modifying
        // statements become CTEs of one statement: one round trip, one snapshot.
        if (!precondition && statements.length === 1) {
          await execute(statements[0]);
          return;
        }
        // Long lists (pruning a long thread) would exceed the 65535 parameters of one statement.
        if (statements.length > CTE_STATEMENTS) {
          await transaction(async (run) => {
            if (precondition) {
              const locked = await run(combine("share", [precondition.rows], ([rows]) => sql`${rows} for share`));
              if (rowsOf(locked).length === 0) throw precondition.failure();
            }
            for (const statement of statements) await run(statement);
          });
          return;
        }
        const ctes = (writes: SQL[]) => writes.map((write, i) => sql`${sql.raw(`s${i}`)} as (${write})`);
        if (!precondition) {
          await execute(
            combine(
              "ctes",
              statements,
              (writes) => sql`with ${sql.join(ctes(writes.slice(0, -1)), sql`, `)} ${writes.at(-1)}`,
            ),
          );
          return;
        }
        // The locked rows decide the whole statement: without them, a division by zero
        // (evaluated at run time, after the lock) aborts every write in it.
        const guarded = combine(
          "guarded",
          [precondition.rows, ...statements],
          ([rows, ...writes]) =>
            sql`with guard as (${rows} for share), ${sql.join(ctes(writes), sql`, `)} select 1 / (select count(*) from guard) as found`,
        );
        try {
          await execute(guarded);
        } catch (error) {
          if (errorCode(error) === "22012") throw precondition.failure();
          throw error;
        }
      }),
    atomicallyUntilSettled: (statements) =>
      retryOnDeadlock(isDeadlock, () =>
        transaction(async (run) => {
          let changed: number;
          do {
            changed = 0;
            for (const statement of statements) changed += changedRows(await run(statement));
          } while (changed > 0);
        }),
      ),
    insert: onConflictInsert,
    nsKey: (namespace) => namespace,
    jsonParam: (json) => sql`${json}::jsonb`,
    metadataMatches(entries) {
      // Containment lets the GIN index find candidates; per-key jsonb equality then
      // makes the match exact (containment alone matches sub-arrays and sub-objects).
      const containment = JSON.stringify(Object.fromEntries(entries));
      const exact = entries.map(
        ([key, value]: [string, JsonValue]) =>
          sql`${checkpoints.metadata} -> ${key}::text = ${JSON.stringify(value)}::jsonb`,
      );
      return sql`(${checkpoints.metadata} @> ${containment}::jsonb and ${sql.join(exact, sql` and `)})`;
    },
    jsonField: (document, key) => sql`${document} ->> ${key}::text`,
    // A lateral lookup per checkpoint: joined as a set, PostgreSQL assumes 100 entries
    // per JSON object and prefers scanning every blob partition.
    pageBlobs: (b) =>
      sql`page cross join lateral (
        select ${b.threadId} as thread_id, ${b.checkpointNs} as checkpoint_ns, ${b.channel} as channel,
               ${b.version} as version, ${b.type} as type, ${b.blob} as blob
        from ${b.table}
        where ${b.threadId} = page.thread_id and ${b.nsKey} = page.ns_key
          and (${b.channel}, ${b.version}) in (select v.key, v.value from jsonb_each_text(page.channel_versions) as v)
      ) as page_blobs`,
    threadActivity: (cursor, idleBefore, limit) =>
      threadActivityBySkipScan(columns.checkpoints, cursor, idleBefore, limit),
    epochMillis: (ms) => sql`to_timestamp(${ms}::double precision / 1000)`,
    readTimestamp(value) {
      if (value instanceof Date) return value;
      // drizzle's postgres.js driver returns timestamptz as text: "2024-01-02 03:04:05.678+00".
      return new Date(
        String(value)
          .replace(" ", "T")
          .replace(/([+-]\d\d)$/, "$1:00"),
      );
    },
    async tableStats() {
      return Promise.all(
        [checkpoints, checkpointBlobs, checkpointWrites].map(async (table) => {
          const name = qualifiedName(table);
          // Partitioned tables keep their rows and indexes in the partitions.
          const [row] = rowsOf(
            await db.execute(sql`select (select count(*) from ${table}) as rows,
              (select coalesce(sum(pg_total_relation_size(relid)), 0) from pg_partition_tree(${name}::regclass)) as bytes`),
          );
          return { table: getTableName(table), rows: Number(row.rows), bytes: Number(row.bytes) };
        }),
      );
    },
    async appliedMigrations({ migrationsTable, migrationsSchema }) {
      const schema = migrationsSchema ?? (await currentSchema(db));
      const name = `${quote(schema)}.${quote(migrationsTable)}`;
      const [exists] = rowsOf(await db.execute(sql`select to_regclass(${name}) is not null as found`));
      if (!exists.found) return [];
      const table = sql`${sql.identifier(schema)}.${sql.identifier(migrationsTable)}`;
      return rowsOf(await db.execute(sql`select created_at from ${table}`)).map((row) => Number(row.created_at));
    },
    async migrate({ migrationsFolder, migrationsTable, migrationsSchema }) {
      // By default beside our tables, which the migrations create in the current schema.
      const schema = migrationsSchema ?? (await currentSchema(db));
      const table = sql`${sql.identifier(schema)}.${sql.identifier(migrationsTable)}`;
      const applied: number[] = [];
      await db.transaction(async (tx) => {
        // Serialises concurrent setup() calls across processes until this transaction ends.
        await tx.execute(sql`select pg_advisory_xact_lock(${lockNumber(`${schema}.${migrationsTable}`)})`);
        const schemaExists = rowsOf(await tx.execute(sql`select 1 from pg_namespace where nspname = ${schema}`)).length;
        if (!schemaExists) await tx.execute(sql`create schema ${sql.identifier(schema)}`);
        await tx.execute(
          sql`create table if not exists ${table} (id serial primary key, hash text not null, created_at bigint)`,
        );
        const recorded = rowsOf(await tx.execute(sql`select created_at from ${table}`));
        for (const migration of pendingMigrations(
          migrationsFolder,
          recorded.map((row) => row.created_at),
        )) {
          await applying(migration, async () => {
            for (const statement of migration.sql) {
              if (statement.trim()) await tx.execute(sql.raw(statement));
            }
          });
          await tx.execute(
            sql`insert into ${table} (hash, created_at) values (${migration.hash}, ${migration.folderMillis})`,
          );
          applied.push(migration.folderMillis);
        }
      });
      return applied;
    },
  };
}
