/**
 * The store's native vector indexes on SQLite: libSQL's vector index (an `F32_BLOB` column
 * with `libsql_vector_idx`, read with `vector_top_k`) and sqlite-vec on better-sqlite3 (a
 * `vec0` table keyed by the rowid of a table naming each vector's item). Both built in one
 * write transaction (BEGIN IMMEDIATE: one process at a time), with `IF NOT EXISTS`.
 */
import { type SQL, sql, type Table } from "drizzle-orm";
import type { Executor, Runner } from "../sql/executor.js";
import type { Statement } from "../sql/statements.js";
import { retryOnConflict } from "./common-sql.js";
import { isBusy } from "./sqlite-units.js";
import type { VectorIndex, VectorIndexKind, VectorRow } from "./store-vectors.js";
import { declaredDims, existsFor, forItems, inChunks, vectorBytes, vectorTableName } from "./vector-common.js";

/** What differs between the two SQLite backends. */
interface SqliteBackend {
  kind: VectorIndexKind;
  maxK: number;
  /** The DDL creating the objects, each `IF NOT EXISTS`. */
  create(dims: number): SQL[];
  /** The dimensions in the side table's DDL. */
  dimsPattern: RegExp;
  remove(predicate: SQL): Statement[];
  insert(rows: VectorRow[]): Statement[];
  removeOrphans: VectorIndex["removeOrphans"];
  nearest(query: Float32Array, k: number): SQL;
}

function sqliteVectorIndex(
  executor: Executor,
  table: string,
  backend: SqliteBackend,
  prepare: () => Promise<void>,
): VectorIndex {
  const existing = async (runner: Runner) => {
    const [row] = await runner.all(sql`select sql from sqlite_master where name = ${table}`);
    return row ? (declaredDims(row.sql, backend.dimsPattern) ?? null) : undefined;
  };
  return {
    kind: backend.kind,
    maxK: backend.maxK,
    async setup(dims, fill) {
      await prepare();
      // Another process building it at the same time holds the write lock: wait, then find it built.
      return retryOnConflict(isBusy, () =>
        executor.transaction(async (tx) => {
          if (existsFor(await existing(tx), dims, table)) return false;
          for (const statement of backend.create(dims)) await tx.script(statement);
          await fill(tx);
          return true;
        }),
      );
    },
    async ready(dims) {
      await prepare();
      return existsFor(await existing(executor), dims, table);
    },
    remove: (keys) => forItems(keys, backend.remove),
    insert: backend.insert,
    removeOrphans: backend.removeOrphans,
    nearest: backend.nearest,
    searching: (runner, _k, work) => work(runner),
  };
}

/** libSQL's own vector index: the vectors in an `F32_BLOB(dims)` column of a rowid table. */
export function libsqlVectorIndex(executor: Executor, items: Table): VectorIndex {
  const name = vectorTableName(items);
  const table = sql.identifier(name);
  const ann = `${name}_ann`;
  return sqliteVectorIndex(
    executor,
    name,
    {
      kind: "libsql",
      maxK: 4096,
      dimsPattern: /embedding F32_BLOB\((\d+)\)/i,
      create: (dims) => [
        sql`create table if not exists ${table} (ns_path text not null, item_key text not null,
          seq integer not null, embedding F32_BLOB(${sql.raw(String(dims))}) not null)`,
        sql`create unique index if not exists ${sql.identifier(`${name}_item`)} on ${table} (ns_path, item_key, seq)`,
        sql`create index if not exists ${sql.identifier(ann)} on ${table} (libsql_vector_idx(embedding, 'metric=cosine'))`,
      ],
      remove: (predicate) => [sql`delete from ${table} where ${predicate}`],
      insert: (rows) =>
        inChunks(rows).map(
          (chunk) =>
            sql`insert into ${table} (ns_path, item_key, seq, embedding) values ${sql.join(
              chunk.map((row) => sql`(${row.path}, ${row.key}, ${row.seq}, ${vectorBytes(row.vector)})`),
              sql`, `,
            )}`,
        ),
      removeOrphans: (itemExists) => [
        sql`delete from ${table} where not ${itemExists(sql`${table}.ns_path`, sql`${table}.item_key`)}`,
      ],
      nearest: (query, k) =>
        sql`select v.ns_path, v.item_key from vector_top_k(${sql.raw(`'${ann.replaceAll("'", "''")}'`)}, ${vectorBytes(query)}, ${k}) as t
          join ${table} as v on v.rowid = t.id`,
    },
    async () => {},
  );
}

/**
 * sqlite-vec on better-sqlite3: a `vec0` table of the vectors (cosine distance) whose rowid
 * is the id of a row naming the item. `load` loads the extension into the connection.
 */
export function sqliteVecIndex(executor: Executor, items: Table, load: () => Promise<void>): VectorIndex {
  const name = vectorTableName(items);
  const vectors = sql.identifier(name);
  const keys = sql.identifier(`${name}_keys`);
  const ids = (predicate: SQL) => sql`select id from ${keys} where ${predicate}`;
  return sqliteVectorIndex(
    executor,
    name,
    {
      kind: "sqlite-vec",
      // sqlite-vec's default bound on k.
      maxK: 4096,
      dimsPattern: /embedding float\[(\d+)\]/i,
      create: (dims) => [
        sql`create table if not exists ${keys} (id integer primary key, ns_path text not null,
          item_key text not null, seq integer not null)`,
        sql`create unique index if not exists ${sql.identifier(`${name}_item`)} on ${keys} (ns_path, item_key, seq)`,
        sql`create virtual table if not exists ${vectors} using vec0(embedding float[${sql.raw(String(dims))}] distance_metric=cosine)`,
      ],
      remove: (predicate) => [
        sql`delete from ${vectors} where rowid in (${ids(predicate)})`,
        sql`delete from ${keys} where ${predicate}`,
      ],
      insert: (rows) =>
        rows.flatMap((row) => [
          sql`insert into ${keys} (ns_path, item_key, seq) values (${row.path}, ${row.key}, ${row.seq})`,
          sql`insert into ${vectors} (rowid, embedding) values ((select id from ${keys}
            where ns_path = ${row.path} and item_key = ${row.key} and seq = ${row.seq}), ${vectorBytes(row.vector)})`,
        ]),
      removeOrphans: (itemExists) => {
        const orphan = sql`not ${itemExists(sql`${keys}.ns_path`, sql`${keys}.item_key`)}`;
        return [sql`delete from ${vectors} where rowid in (${ids(orphan)})`, sql`delete from ${keys} where ${orphan}`];
      },
      nearest: (query, k) =>
        sql`select m.ns_path, m.item_key from (select rowid as id from ${vectors}
          where embedding match ${vectorBytes(query)} and k = ${k}) as n join ${keys} as m on m.id = n.id`,
    },
    load,
  );
}
