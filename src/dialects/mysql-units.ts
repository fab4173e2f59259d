/**
 * How the MySQL dialect runs a write unit. On MariaDB a unit is one compound statement
 * (`BEGIN NOT ATOMIC ... END`): its transaction, the precondition's locking read and its
 * statements reach the server in one round trip, where a transaction through mysql2
 * costs one per statement (a put was eight). MySQL has no compound statements outside
 * stored programs: there, and for claims, the unit is an interactive transaction. Either
 * way a deadlock victim runs again, as does a unit refused by a broken table instance.
 */
import { sql, type Table } from "drizzle-orm";
import { InvalidInputError } from "../errors.js";
import type { Executor, Runner } from "../sql/executor.js";
import { mysqlLiteralLength } from "../sql/mysql-literals.js";
import { type CompiledQuery, type Statement, type StatementCombiner, statementCombiner } from "../sql/statements.js";
import { errorChain, readIn, retryOnConflict, settleIn } from "./common-sql.js";
import type { Dialect, Precondition, Row } from "./dialect.js";
import { flushTableCache, isBrokenTriggerCache } from "./mysql-trigger-cache.js";

/** InnoDB's deadlock victim (1213), also under drizzle's DrizzleQueryError wrapper. */
export const isConflict = (error: unknown) => [...errorChain(error)].some((e) => e.errno === 1213);

/** The message a compound unit signals with when the precondition's rows are gone (SQLSTATE 45000, user-defined). */
const PRECONDITION_FAILED = "langgraph-checkpoint-drizzle: precondition failed";

const isFailedPrecondition = (error: unknown) =>
  [...errorChain(error)].some((e) => e.sqlState === "45000" && e.sqlMessage === PRECONDITION_FAILED);

/**
 * Values go as hex literals (see mysql-literals.ts), so a unit is about twice its binary
 * values. Smaller units skip asking the server: every default max_allowed_packet is larger.
 */
const LARGE_UNIT = 1024 * 1024;

/**
 * Whether a server of this `@@version` runs `BEGIN NOT ATOMIC` outside stored programs:
 * MariaDB from 10.1 (also as some proxies report it, behind the "5.5.5-" of its handshake).
 */
export function runsCompoundStatements(version: string): boolean {
  const [, major, minor] = /^(\d+)\.(\d+)/.exec(version.replace(/^5\.5\.5-/, "")) ?? [];
  return /mariadb/i.test(version) && (Number(major) > 10 || (Number(major) === 10 && Number(minor) >= 1));
}

export interface MySqlUnitOptions {
  /**
   * Whether write units go as one compound statement; by default, when the server is
   * MariaDB. False keeps MySQL's interactive transaction (tests run it on MariaDB).
   */
  compoundStatements?: boolean;
}

type Units = Pick<Dialect, "atomically" | "atomicallyUntilSettled" | "atomicallyReading"> & {
  transaction<T>(work: (tx: Runner) => Promise<T>): Promise<T>;
};

/** How the dialect reads rows: on its executor, or on `runner` (a transaction) when given. */
type RowQuery = (statement: Statement, runner?: Runner) => Promise<Row[]>;

/**
 * A check that a unit fits the server's max_allowed_packet: said clearly, instead of the
 * server dropping the connection mid-write (the store checks each of its statements).
 */
export function packetSizeCheck(query: RowQuery) {
  let maxPacket: Promise<number> | undefined;
  return async (queries: CompiledQuery[]): Promise<void> => {
    let size = 0;
    for (const compiled of queries) {
      size += compiled.sql.length;
      for (const param of compiled.params) size += mysqlLiteralLength(param);
    }
    if (size < LARGE_UNIT) return;
    // A failed question (a dropped connection) fails this unit only: the next one asks again.
    maxPacket ??= query(sql`select @@max_allowed_packet as packet`).then(
      ([row]) => Number(row.packet),
      (error: unknown) => {
        maxPacket = undefined;
        throw error;
      },
    );
    const limit = await maxPacket;
    if (size > limit) {
      throw new InvalidInputError(
        `this write needs a MySQL packet of about ${size} bytes, more than the server's max_allowed_packet (${limit}): raise max_allowed_packet`,
      );
    }
  };
}

/** Whether the server runs compound statements outside stored programs (MariaDB); asked once, at the first unit. */
function compoundSupport(query: RowQuery, options: MySqlUnitOptions) {
  let compound: Promise<boolean> | undefined;
  return (): Promise<boolean> => {
    if (options.compoundStatements !== undefined) return Promise.resolve(options.compoundStatements);
    compound ??= query(sql`select @@version as version`).then(
      ([row]) => runsCompoundStatements(String(row?.version)),
      (error: unknown) => {
        compound = undefined;
        throw error;
      },
    );
    return compound;
  };
}

/** The precondition's rows, locked: shared, or for a claim this transaction's alone (rows another holds skipped). */
function preconditionLocks(combine: StatementCombiner) {
  return (precondition: Precondition): Statement =>
    precondition.claim
      ? combine("claim", [precondition.rows], ([rows]) => sql`${rows} for update skip locked`)
      : precondition.exclusive
        ? combine("exclusive", [precondition.rows], ([rows]) => sql`${rows} for update`)
        : combine("share", [precondition.rows], ([rows]) => sql`${rows} lock in share mode`);
}

/**
 * The unit as one compound statement. Any error rolls the transaction back and is raised
 * again unchanged (a deadlock victim keeps errno 1213); a precondition whose rows are
 * gone signals PRECONDITION_FAILED before anything is written. The transaction is set to
 * READ COMMITTED, as the interactive path sets it.
 */
function compoundUnits(combine: StatementCombiner) {
  /** `before`: how many of the statements run before the check (see Precondition.afterFirst). */
  return (statements: Statement[], check?: Statement, before = 0): Statement =>
    combine(check ? `compound-checked-${before}` : "compound", check ? [check, ...statements] : statements, (sqls) => {
      const writes = sqls.slice(check ? 1 : 0).map((write) => sql`${write};`);
      const checked = check
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
          ...writes.slice(0, before),
          ...checked,
          ...writes.slice(before),
          sql.raw("commit;"),
          sql.raw("end"),
        ],
        sql`\n`,
      );
    });
}

/**
 * The write units of a MySQL dialect over `executor`; `query` reads rows as the dialect
 * does, `checkpoints` is the table whose cached instance a repair flushes.
 */
export function mysqlUnits(
  executor: Executor,
  query: RowQuery,
  checkpoints: Table,
  options: MySqlUnitOptions = {},
): Units {
  const checkPacketSize = packetSizeCheck(query);
  const compoundStatements = compoundSupport(query, options);
  const combine = statementCombiner();
  const compoundUnit = compoundUnits(combine);
  const locked = preconditionLocks(combine);

  /**
   * A write unit, run again when InnoDB chose it as a deadlock victim (rolled back whole),
   * and once more after a broken table instance was flushed (see isBrokenTriggerCache).
   */
  function retryingWrite<T>(run: () => Promise<T>): Promise<T> {
    return retryOnConflict(isConflict, async () => {
      try {
        return await run();
      } catch (error) {
        if (!isBrokenTriggerCache(error)) throw error;
        await flushTableCache(executor, checkpoints, error);
        return run();
      }
    });
  }

  function transaction<T>(work: (tx: Runner) => Promise<T>): Promise<T> {
    return retryingWrite(() => executor.transaction(work));
  }

  return {
    transaction,
    async atomically(statements, precondition) {
      await checkPacketSize(statements.map((statement) => executor.compile(statement)));
      if (!precondition && statements.length === 1) {
        // Two upserts of one new key can deadlock each other too; the victim's statement is undone whole.
        await retryingWrite(() => executor.run(statements[0]));
        return;
      }
      // Statements run before the precondition's lock (see Precondition.afterFirst).
      const before = precondition?.afterFirst ? 1 : 0;
      if (!precondition?.claim && (await compoundStatements())) {
        const unit = compoundUnit(statements, precondition && locked(precondition), before);
        await retryingWrite(() => executor.run(unit)).catch((error: unknown) => {
          throw precondition && isFailedPrecondition(error) ? precondition.failure() : error;
        });
        return;
      }
      await transaction(async (tx) => {
        for (const statement of statements.slice(0, before)) await tx.run(statement);
        if (precondition && (await tx.all(locked(precondition))).length === 0) throw precondition.failure();
        for (const statement of statements.slice(before)) await tx.run(statement);
      });
    },
    async atomicallyUntilSettled(statements, unit) {
      await transaction((tx) => settleIn(tx, statements, unit, locked));
    },
    atomicallyReading: (work, precondition) =>
      transaction((tx) => readIn(tx, work, precondition, locked, (statement) => query(statement, tx))),
  };
}
