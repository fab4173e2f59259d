/**
 * Re-sealing a copied thread's values for their new thread (copyThread): a sealed value
 * is bound to its thread, and a copy takes the source's bytes.
 */
import { getTableName } from "drizzle-orm";
import type { Dialect, Row, UnitRunner } from "../../dialects/dialect.js";
import { DecryptionError, MissingKeyError } from "../../errors.js";
import type { Sealer } from "../../serde/sealing.js";
import type { Statement } from "../../sql/statements.js";
import { holdingThread } from "../threads/thread-lock.js";
import { resealStatement, type SealedTable, sealedRows, sealedTables } from "./sealed-tables.js";
import { asBytes } from "./values.js";

/** What copyThread re-seals: the statements, and the bytes each copied row gets, by its key. */
export interface CopyResealing {
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
    asBytes(row.data),
    table.place({ ...row, thread_id: source }),
    table.where(row),
  );
  const [sealedType, sealed] = sealer.seal(type, plain, table.place(row));
  return resealStatement(table, row, sealedType, sealed);
}

/**
 * On a driver that reads inside no unit (Cloudflare D1): statements that re-seal, for
 * `target`, the values a copy of `source` will copy as bytes, read before its unit and
 * run in it after its inserts. A row that changed since it was read here is not
 * overwritten with older bytes: {@link resealLeftovers} re-seals it after the copy.
 */
export async function copyResealing(
  dialect: Dialect,
  sealer: Sealer,
  source: string,
  target: string,
): Promise<CopyResealing> {
  const statements: Statement[] = [];
  const resealed = new Map<string, Uint8Array>();
  for (const table of Object.values(sealedTables(dialect))) {
    for (const row of await sealedRows((statement) => dialect.query(statement), table, source)) {
      const [type, plain] = sealer.open(String(row.type), asBytes(row.data), table.place(row), table.where(row));
      const [sealedType, sealed] = sealer.seal(type, plain, table.place({ ...row, thread_id: target }));
      statements.push(resealStatement(table, { ...row, thread_id: target }, sealedType, sealed));
      resealed.set(rowKey(table, row, target), sealed);
    }
  }
  return { statements, resealed };
}

/**
 * After a copy by {@link copyResealing}: re-seals for `target` the copied rows its unit
 * did not, those whose source row changed or appeared between copyResealing's read and
 * the copy (a writer, a rekey). Such a row holds the source's bytes, bound to the source
 * thread: unreadable in the copy until re-sealed. A row that opens for the target
 * (written to it since) is left alone.
 */
export async function resealLeftovers(
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
