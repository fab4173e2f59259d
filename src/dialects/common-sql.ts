/** SQL that several dialects write the same way. */
import { type Column, type SQL, sql, type Table } from "drizzle-orm";
import { WriteConflictError } from "../errors.js";
import type { Runner } from "../sql/executor.js";
import { type Statement, valueList } from "../sql/statements.js";
import type { BlobColumns, InsertSpec, Precondition, SettledUnit, UnitRunner } from "./dialect.js";

const names = (columns: Column[]) =>
  sql.join(
    columns.map((column) => sql.identifier(column.name)),
    sql`, `,
  );

/** `insert into t (a, b) values (?, ?), (?, ?)`: the part every dialect writes alike. */
export function insertValues(table: Table, columns: Column[], rows: unknown[][]): SQL {
  const values = sql.join(
    rows.map((row) => sql`(${valueList(row)})`),
    sql`, `,
  );
  return sql`insert into ${table} (${names(columns)}) values ${values}`;
}

/** INSERT ... ON CONFLICT (key) DO NOTHING | DO UPDATE, as PostgreSQL and SQLite write it; `assignments`: more `col = expr` of the update. */
export function onConflictInsert(
  { table, columns, rows, conflictTarget, update }: InsertSpec,
  assignments: SQL[] = [],
): SQL {
  const set = [
    ...update.map((column) => sql`${sql.identifier(column.name)} = excluded.${sql.identifier(column.name)}`),
    ...assignments,
  ];
  const action = set.length === 0 ? sql`do nothing` : sql`do update set ${sql.join(set, sql`, `)}`;
  return sql`${insertValues(table, columns, rows)} on conflict (${names(conflictTarget)}) ${action}`;
}

/**
 * The body of Dialect.atomicallyUntilSettled on an interactive transaction: `before`
 * once, the precondition's rows locked by `lock` (none: its failure), rounds of
 * `statements` until one changes no row, then `after` once.
 */
export async function settleIn(
  tx: Runner,
  statements: Statement[],
  unit: SettledUnit | undefined,
  lock: (precondition: Precondition) => Statement,
): Promise<void> {
  for (const statement of unit?.before ?? []) await tx.run(statement);
  const precondition = unit?.precondition;
  if (precondition && (await tx.all(lock(precondition))).length === 0) throw precondition.failure();
  let changed: number;
  do {
    changed = 0;
    for (const statement of statements) changed += await tx.run(statement);
  } while (changed > 0);
  for (const statement of unit?.after ?? []) await tx.run(statement);
}

/**
 * The body of Dialect.atomicallyReading on an interactive transaction: the precondition's
 * rows locked by `lock` (none: its failure), then `work`, reading through `query`.
 */
export async function readIn<T>(
  tx: Runner,
  work: (tx: UnitRunner) => Promise<T>,
  precondition: Precondition | undefined,
  lock: (precondition: Precondition) => Statement,
  query: UnitRunner["query"] = (statement) => tx.all(statement),
): Promise<T> {
  if (precondition && (await tx.all(lock(precondition))).length === 0) throw precondition.failure();
  return work({ query, run: (statement) => tx.run(statement) });
}

/** How many times a unit runs before its conflicts become a WriteConflictError. */
const CONFLICT_ATTEMPTS = 10;

/**
 * Runs an atomic unit again while the database refuses it as a lock conflict: a
 * deadlock victim, a serialization failure or a busy lock is rolled back whole, so
 * running it again is safe. Waits grow (5 ms doubling to 320 ms, about 1.3 s in all) and
 * are drawn at random below that bound, so two units that collided do not collide again
 * in step. After the last attempt: a WriteConflictError, the last conflict as its cause.
 */
export async function retryOnConflict<T>(isConflict: (error: unknown) => boolean, run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (!isConflict(error)) throw error;
      if (attempt >= CONFLICT_ATTEMPTS) throw new WriteConflictError(attempt, error);
      const bound = 5 * 2 ** Math.min(attempt - 1, 6);
      await new Promise((resolve) => setTimeout(resolve, Math.random() * bound));
    }
  }
}

/** The error, and the causes below it (drizzle wraps a driver's error in DrizzleQueryError). */
export function* errorChain(error: unknown): Generator<Record<string, unknown>> {
  let current = error;
  for (let depth = 0; depth < 4 && typeof current === "object" && current !== null; depth++) {
    yield current as Record<string, unknown>;
    current = (current as { cause?: unknown }).cause;
  }
}

/** How a dialect lists the versions a `delta_chain` names, and joins the blobs table to a row. */
export interface ChainSql {
  /** A FROM item to cross join after the row of `deltaChain`, and the expression of one version. */
  versions(deltaChain: SQL): { from: SQL; version: SQL };
  /** `lateral`: the blob lookup as a lateral subquery (PostgreSQL: an index lookup per base, each partition pruned). */
  lookup: "join" | "lateral";
}

/** Delta rows of a page whose bases chainBaseBlobs loads with it. */
const MAX_DELTAS_WITH_PAGE = 64;

/** The columns of `base_blob` in Dialect.chainBaseBlobs, in this order. */
const BASE_BLOB_COLUMNS = ["thread_id", "checkpoint_ns", "channel", "version", "type", "blob", "delta_chain"] as const;

/** Dialect.chainBaseBlobs from a dialect's {@link ChainSql}. */
export function chainBaseBlobs(b: BlobColumns, head: string, chain: ChainSql): SQL {
  const h = sql.raw(head);
  const { from, version } = chain.versions(sql.raw("delta.delta_chain"));
  // EXCEPT: each base once, and none the page reads anyway (a list's heads extend each other).
  // The limit bounds the planner's estimate, which otherwise grows with the blob rows
  // per thread (PostgreSQL's generic plan of a long thread's getTuple reached
  // jit_above_cost); a page with more delta rows gets the rest from delta-read.ts.
  const wanted = sql`(
      select delta.thread_id as thread_id, delta.ns_key as ns_key, delta.channel as channel, ${version} as version
      from (select * from ${h} where ${h}.delta_chain is not null limit ${sql.raw(String(MAX_DELTAS_WITH_PAGE))}) as delta
        cross join ${from}
      except
      select thread_id, ns_key, channel, version from ${h}
    ) as wanted`;
  const source = [b.threadId, b.checkpointNs, b.channel, b.version, b.type, b.blob, b.deltaChain];
  const matches = (blob: (column: Column) => SQL) =>
    sql`${blob(b.threadId)} = wanted.thread_id and ${blob(b.nsKey)} = wanted.ns_key
      and ${blob(b.channel)} = wanted.channel and ${blob(b.version)} = wanted.version`;
  if (chain.lookup === "lateral") {
    const selected = sql.join(
      source.map((column, i) => sql`${column} as ${sql.identifier(BASE_BLOB_COLUMNS[i])}`),
      sql`, `,
    );
    // The key is unique; "limit 1" keeps PostgreSQL from flattening the subquery into a
    // join, which it hashed over every blob partition instead of looking each base up.
    return sql`${wanted} cross join lateral (
      select ${selected} from ${b.table} where ${matches((column) => sql`${column}`)} limit 1) as base_blob`;
  }
  // The blobs table's own column names are those of base_blob. The planner looks each
  // base up by key on its own (SQLite).
  return sql`${wanted} join ${b.table} as base_blob
    on ${matches((column) => sql`base_blob.${sql.identifier(column.name)}`)}`;
}
