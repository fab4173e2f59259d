/**
 * A write unit as one MariaDB compound statement (`BEGIN NOT ATOMIC ... END`): its
 * transaction, the precondition's locking read and its statements reach the server in
 * one round trip, where a transaction through mysql2 costs one per statement (a put was
 * eight). MySQL has no compound statements outside stored programs; there the dialect
 * keeps the interactive transaction.
 */
import { type SQL, sql } from "drizzle-orm";
import type { Statement } from "../sql/statements.js";
import { errorChain } from "./common-sql.js";

/** The message the unit signals with when the precondition's rows are gone (SQLSTATE 45000, user-defined). */
const PRECONDITION_FAILED = "langgraph-checkpoint-drizzle: precondition failed";

type Combine = (kind: string, parts: Statement[], build: (parts: SQL[]) => SQL) => Statement;

/**
 * The unit as one statement. Any error rolls the transaction back and is raised again
 * unchanged (a deadlock victim keeps errno 1213, so the dialect's retry sees it); a
 * precondition whose rows are gone signals {@link isFailedPrecondition} before anything
 * is written. The transaction is set to READ COMMITTED, as the interactive path does.
 */
export function compoundUnit(combine: Combine, statements: Statement[], lockedPrecondition?: Statement): Statement {
  const parts = lockedPrecondition ? [lockedPrecondition, ...statements] : statements;
  return combine(lockedPrecondition ? "compound-checked" : "compound", parts, (sqls) => {
    const writes = lockedPrecondition ? sqls.slice(1) : sqls;
    const check = lockedPrecondition
      ? [
          sql`if not exists (${sqls[0]}) then signal sqlstate '45000' set message_text = ${sql.raw(`'${PRECONDITION_FAILED}'`)}; end if;`,
        ]
      : [];
    return sql.join(
      [
        sql.raw("begin not atomic"),
        sql.raw("declare exit handler for sqlexception begin rollback; resignal; end;"),
        sql.raw("set transaction isolation level read committed;"),
        sql.raw("start transaction;"),
        ...check,
        ...writes.map((write) => sql`${write};`),
        sql.raw("commit;"),
        sql.raw("end"),
      ],
      sql`\n`,
    );
  });
}

/** The error a {@link compoundUnit} raised because its precondition's rows were gone (nothing was written). */
export const isFailedPrecondition = (error: unknown) =>
  [...errorChain(error)].some((e) => e.sqlState === "45000" && e.sqlMessage === PRECONDITION_FAILED);

/** Whether a server's `@@version` names MariaDB, whose compound statements run outside stored programs. */
export const runsCompoundStatements = (version: unknown) => /mariadb/i.test(String(version));
