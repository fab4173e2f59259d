/**
 * Re-sealing a copied thread's values for their new thread (copyThread): a sealed value
 * is bound to its thread, and a copy takes the source's bytes.
 */
import { getTableName, type SQL, sql } from "drizzle-orm";
import type { Dialect, Row, UnitRunner } from "../../dialects/dialect.js";
import { DecryptionError, MissingKeyError } from "../../errors.js";
import type { Sealer } from "../../serde/sealing.js";
import type { Statement } from "../../sql/statements.js";
import { holdingThread } from "../threads/thread-lock.js";
import { resealStatement, type SealedTable, sealedRows, sealedTables } from "./sealed-tables.js";
import { asBytes } from "./values.js";

/** A copy of a thread: its `insert ... select` statements, and the error when its source has no row. */
export interface ThreadCopy {
  source: string;
  target: string;
  copies: Statement[];
  missing: () => Error;
}

/** What copyThread re-seals: the statements, and the bytes each copied row gets, by its key. */
interface CopyResealing {
  statements: Statement[];
  resealed: Map<string, Uint8Array>;
}

/** A sealed row's key in one of the sealed tables, under `threadId`. */
const rowKey = (table: SealedTable, row: Row, threadId: string) =>
  JSON.stringify([getTableName(table.table), threadId, ...table.keys.slice(1).map(([name]) => keyPart(row[name]))]);

const keyPart = (value: unknown) => (value instanceof Uint8Array ? Buffer.from(value).toString("hex") : String(value));

/**
 * Statements that re-seal, for `target`, the values copyThread copied from `source` as
 * bytes (a value is bound to its thread): run in the copy's own unit, after its inserts,
 * where `tx` reads what they inserted. A row that does not open for the source stops the
 * copy (nothing written).
 */
export async function copiedResealing(
  tx: UnitRunner,
  dialect: Dialect,
  sealer: Sealer,
  source: string,
  target: string,
): Promise<Statement[]> {
  const statements: Statement[] = [];
  for (const table of Object.values(sealedTables(dialect))) {
    for (const row of await sealedRows(tx.query, table, target)) {
      statements.push(resealedFrom(table, row, sealer, source));
    }
  }
  return statements;
}

/** Re-seals a row of `table` that holds the bytes of `source`'s row, for its own place. */
function resealedFrom(table: SealedTable, row: Row, sealer: Sealer, source: string): Statement {
  const [type, plain] = sealer.open(
    String(row.type),
    row.data as Uint8Array,
    table.place({ ...row, thread_id: source }),
    table.where(row),
  );
  const [sealedType, sealed] = sealer.seal(type, plain, table.place(row));
  return resealStatement(table, row, sealedType, sealed);
}

/** How often a batch-only copy whose source changed meanwhile reads it again, before it re-seals in two steps. */
const CHECKED_ATTEMPTS = 5;

/** The source of a batch-only copy changed between its read and its batch. */
class SourceChanged extends Error {}

/**
 * An encrypted copy on a driver that reads inside no unit (Cloudflare D1): the source's
 * values are read and re-sealed for `target` first; the copy's batch then checks that no
 * copied row kept the source's bytes (a value the source got or changed in between: a
 * writer, a rekey) and otherwise writes nothing, and the copy starts again. A source
 * that changes every time ({@link CHECKED_ATTEMPTS}) is copied without the check, and
 * what its batch left as copied is re-sealed right after it ({@link resealLeftovers}).
 */
export async function copySealedInBatches(
  dialect: Dialect,
  sealer: Sealer,
  { source, target, copies, missing }: ThreadCopy,
): Promise<void> {
  const postcondition = { rows: nothingLeftAsCopied(dialect, source, target), failure: () => new SourceChanged() };
  for (let attempt = 1; attempt <= CHECKED_ATTEMPTS; attempt++) {
    const { statements } = await copyResealing(dialect, sealer, source, target);
    try {
      await holdingThread(dialect, source, [...copies, ...statements], { postcondition, missing });
      return;
    } catch (error) {
      if (!(error instanceof SourceChanged)) throw error;
    }
  }
  const resealing = await copyResealing(dialect, sealer, source, target);
  await holdingThread(dialect, source, [...copies, ...resealing.statements], { missing });
  await resealLeftovers(dialect, sealer, source, target, resealing.resealed);
}

/**
 * A select with a row when no value of `target` holds the bytes of the same row of
 * `source`: every copied value was re-sealed (a re-sealed value never equals its source,
 * its nonce is new).
 */
function nothingLeftAsCopied(dialect: Dialect, source: string, target: string): SQL {
  const checks = Object.values(sealedTables(dialect)).map((table) => {
    const [[, threadId], ...keys] = table.keys;
    const columns = sql.join([...keys.map(([, column]) => column), table.blob], sql`, `);
    return sql`not exists (select 1 from ${table.table} where ${threadId} = ${target} and ${table.type} <> 'empty'
      and (${columns}) in (select ${columns} from ${table.table} where ${threadId} = ${source}))`;
  });
  return sql`select 1 where ${sql.join(checks, sql` and `)}`;
}

/**
 * Statements that re-seal, for `target`, the values a copy of `source` will copy as
 * bytes, read before its unit and run in it after its inserts. A row that changed since
 * it was read here is not overwritten with older bytes.
 */
async function copyResealing(dialect: Dialect, sealer: Sealer, source: string, target: string): Promise<CopyResealing> {
  const statements: Statement[] = [];
  const resealed = new Map<string, Uint8Array>();
  for (const table of Object.values(sealedTables(dialect))) {
    for (const row of await sealedRows((statement) => dialect.query(statement), table, source)) {
      const [type, plain] = sealer.open(String(row.type), row.data as Uint8Array, table.place(row), table.where(row));
      const [sealedType, sealed] = sealer.seal(type, plain, table.place({ ...row, thread_id: target }));
      statements.push(resealStatement(table, { ...row, thread_id: target }, sealedType, sealed));
      resealed.set(rowKey(table, row, target), sealed);
    }
  }
  return { statements, resealed };
}

/**
 * After a copy by {@link copyResealing} without the check: re-seals for `target` the
 * copied rows its unit did not, those whose source row changed or appeared between
 * copyResealing's read and the copy. Such a row holds the source's bytes, bound to the
 * source thread: unreadable in the copy until re-sealed. A row that opens for the target
 * (written to it since) is left alone.
 */
async function resealLeftovers(
  dialect: Dialect,
  sealer: Sealer,
  source: string,
  target: string,
  resealed: Map<string, Uint8Array>,
): Promise<void> {
  const statements: Statement[] = [];
  for (const table of Object.values(sealedTables(dialect))) {
    for (const row of await sealedRows((statement) => dialect.query(statement), table, target)) {
      const bytes = asBytes(row.data);
      const planned = resealed.get(rowKey(table, row, target));
      if (planned && Buffer.compare(Buffer.from(planned), Buffer.from(bytes)) === 0) continue;
      try {
        sealer.open(String(row.type), bytes, table.place(row), table.where(row));
        continue;
      } catch (error) {
        if (!(error instanceof DecryptionError) || error instanceof MissingKeyError) throw error;
      }
      statements.push(resealedFrom(table, row, sealer, source));
    }
  }
  if (statements.length > 0) await holdingThread(dialect, target, statements);
}
