/**
 * The store's native vector index on PostgreSQL: pgvector (a server with the extension
 * installed, or PGlite with its vector extension). Vectors in a side table of `vector(dims)`
 * with an HNSW index on cosine distance; `hnsw.ef_search` follows the k asked for.
 */
import { type SQLWrapper, sql } from "drizzle-orm";
import { getTableConfig, type PgTable } from "drizzle-orm/pg-core";
import { VectorIndexError } from "../errors.js";
import type { Executor, Runner } from "../sql/executor.js";
import { lockNumber, readCommitted } from "./pg-migrations.js";
import type { VectorIndex, VectorRow } from "./store-vectors.js";
import { declaredDims, existsFor, forItems, inChunks, vectorTableName } from "./vector-common.js";

/** pgvector's largest `hnsw.ef_search`: an HNSW scan returns at most that many rows. */
const MAX_EF_SEARCH = 1000;

/** A vector as pgvector's text input: float32 values print and parse back exactly. */
const literal = (vector: Float32Array) => `[${Array.from(vector).join(",")}]`;

/** Says clearly when the server cannot have pgvector at all. */
async function requireExtension(executor: Executor): Promise<void> {
  const [available] = await executor.all(
    sql`select exists (select 1 from pg_available_extensions where name = 'vector') as available`,
  );
  if (!available?.available) {
    throw new VectorIndexError(
      "index.native: this PostgreSQL has no pgvector extension (install pgvector on the server; on PGlite pass extensions: { vector } from @electric-sql/pglite-pgvector)",
    );
  }
}

/** The side table of `dims`-dimensional vectors, one row per (item, embedded field), and its HNSW index. */
async function createSideTable(tx: Runner, table: SQLWrapper, name: string, dims: number): Promise<void> {
  await tx.script(sql`create table ${table} (
    ns_path text collate "C" not null, item_key text collate "C" not null, seq integer not null,
    embedding vector(${sql.raw(String(dims))}) not null, primary key (ns_path, item_key, seq))`);
  await tx.script(
    sql`create index ${sql.identifier(`${name}_hnsw`)} on ${table} using hnsw (embedding vector_cosine_ops)`,
  );
}

export function pgVectorIndex(executor: Executor, items: PgTable): VectorIndex {
  const { schema } = getTableConfig(items);
  const name = vectorTableName(items);
  const table = schema ? sql`${sql.identifier(schema)}.${sql.identifier(name)}` : sql.identifier(name);
  const regclass = schema
    ? `"${schema.replaceAll('"', '""')}"."${name.replaceAll('"', '""')}"`
    : `"${name.replaceAll('"', '""')}"`;
  const c = (column: string) => sql`${table}.${sql.identifier(column)}`;

  /** The dimensions of the existing side table, undefined when there is none. */
  const existing = async (runner: Runner): Promise<number | undefined | null> => {
    const [row] = await runner.all(
      sql`select format_type(a.atttypid, a.atttypmod) as type from pg_attribute a
        where a.attrelid = to_regclass(${regclass}) and a.attname = 'embedding'`,
    );
    return row ? (declaredDims(row.type, /^vector\((\d+)\)$/) ?? null) : undefined;
  };

  return {
    kind: "pgvector",
    maxK: MAX_EF_SEARCH,
    async setup(dims, fill) {
      await requireExtension(executor);
      return executor.transaction(async (tx) => {
        await readCommitted(tx);
        // Serialises concurrent setup() calls across processes until the transaction ends.
        await tx.all(sql`select pg_advisory_xact_lock(${lockNumber(`vectors:${regclass}`)})`);
        try {
          await tx.script(sql`create extension if not exists vector`);
        } catch (error) {
          throw new VectorIndexError(`index.native: creating the pgvector extension failed: ${String(error)}`, {
            cause: error,
          });
        }
        if (existsFor(await existing(tx), dims, regclass)) return false;
        await createSideTable(tx, table, name, dims);
        await fill(tx);
        return true;
      });
    },
    async ready(dims) {
      return existsFor(await existing(executor), dims, regclass);
    },
    remove: (keys) => forItems(keys, (predicate) => [sql`delete from ${table} where ${predicate}`]),
    insert: (rows: VectorRow[]) =>
      inChunks(rows).map(
        (chunk) =>
          sql`insert into ${table} (ns_path, item_key, seq, embedding) values ${sql.join(
            chunk.map((row) => sql`(${row.path}, ${row.key}, ${row.seq}, cast(${literal(row.vector)} as vector))`),
            sql`, `,
          )}`,
      ),
    removeOrphans: (itemExists) => [sql`delete from ${table} where not ${itemExists(c("ns_path"), c("item_key"))}`],
    nearest: (query, k) =>
      sql`select ${c("ns_path")}, ${c("item_key")} from ${table}
        order by ${c("embedding")} <=> cast(${literal(query)} as vector) limit ${k}`,
    async searching(runner, k, work) {
      const setting = String(Math.min(MAX_EF_SEARCH, Math.max(40, k)));
      const run = async (tx: Runner) => {
        // Local to the transaction: never leaks to another statement of a pooled connection.
        await tx.all(sql`select set_config('hnsw.ef_search', ${setting}, true)`);
        return work(tx);
      };
      return runner === executor ? executor.transaction(run) : run(runner);
    },
  };
}
