/**
 * The MySQL dialect's write units, both ways it runs them, on a real MariaDB: as one
 * compound statement (MariaDB, the default there) and as an interactive transaction
 * (MySQL's way, forced here with `compoundStatements: false`). Either way a unit takes
 * effect whole or not at all, a precondition whose rows are gone writes nothing and
 * throws the unit's own error, and a deadlock victim runs again until it commits.
 */
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Dialect } from "../../src/dialects/dialect.js";
import { mysqlDialect } from "../../src/dialects/mysql.js";
import { runsCompoundStatements } from "../../src/dialects/mysql-units.js";
import type { DrizzleSaver } from "../../src/index.js";
import * as mysqlSchema from "../../src/schema/mysql.js";
import { freshSaver } from "../helpers/databases.js";
import { openRaw } from "../helpers/raw.js";
import { describeError } from "./helpers.js";

const dialectOf = (saver: DrizzleSaver) => (saver as unknown as { dialect: Dialect }).dialect;

class GoneError extends Error {}

describe.each([
  { path: "one compound statement", compoundStatements: undefined },
  { path: "an interactive transaction", compoundStatements: false },
])("mysql: a write unit as $path", ({ compoundStatements }) => {
  let saver: DrizzleSaver;
  let url: string;
  let dialect: Dialect;
  let statements: string[] = [];

  beforeAll(async () => {
    ({ saver, url } = await freshSaver("mysql"));
    const tables = { ...mysqlSchema.checkpointTables(), checkpointMetadata: mysqlSchema.checkpointMetadata };
    const executor = dialectOf(saver).executor;
    const logging = {
      ...executor,
      run: (statement: Parameters<typeof executor.run>[0]) => {
        statements.push(executor.compile(statement).sql);
        return executor.run(statement);
      },
    };
    dialect = mysqlDialect(logging, tables, { compoundStatements });
    await executor.run(sql`create table unit_rows (id int primary key, v int not null)`);
    await executor.run(sql`insert into unit_rows values (1, 0), (2, 0)`);
  });

  afterAll(async () => {
    await saver?.close();
  });

  const executor = () => dialectOf(saver).executor;
  const values = async () =>
    (await dialect.query(sql`select id, v from unit_rows order by id`)).map((row) => [Number(row.id), Number(row.v)]);
  const exists = (id: number) => ({
    rows: sql`select 1 from unit_rows where id = ${id}`,
    failure: () => new GoneError(`row ${id} is gone`),
  });

  it("applies every statement when the precondition's rows exist", async () => {
    statements = [];
    await dialect.atomically(
      [sql`update unit_rows set v = v + 1 where id = 1`, sql`update unit_rows set v = v + 10 where id = 2`],
      exists(1),
    );
    expect(await values()).toEqual([
      [1, 1],
      [2, 10],
    ]);
    // The compound unit reaches the server as one statement; the interactive one runs its statements on a transaction.
    if (compoundStatements === undefined) expect(statements).toHaveLength(1);
  });

  it("writes nothing and throws the precondition's error when its rows are gone", async () => {
    const before = await values();
    await expect(
      dialect.atomically([sql`update unit_rows set v = v + 1 where id = 1`], exists(3)),
    ).rejects.toBeInstanceOf(GoneError);
    expect(await values()).toEqual(before);
  });

  it("undoes the statements before a failing one, and the next unit runs on a clean connection", async () => {
    const before = await values();
    const failed = await dialect
      .atomically([sql`update unit_rows set v = v + 1 where id = 1`, sql`insert into unit_rows values (2, 0)`])
      .then(() => "committed", describeError);
    expect(failed).toMatch(/Duplicate entry '2'.*\[ER_DUP_ENTRY\]/);
    expect(await values()).toEqual(before);
    await dialect.atomically([
      sql`update unit_rows set v = v + 100 where id = 1`,
      sql`update unit_rows set v = v + 100 where id = 2`,
    ]);
    expect(await values()).toEqual(before.map(([id, v]) => [id, v + 100]));
  });

  it("holds the precondition's rows locked until the unit ends", async () => {
    await executor().run(sql`insert into unit_rows values (5, 0)`);
    const raw = await openRaw("mysql", url);
    try {
      let ended = false;
      const unit = dialect
        .atomically([sql`do sleep(1)`, sql`update unit_rows set v = v + 1 where id = 1`], exists(5))
        .finally(() => {
          ended = true;
        });
      // Another connection's locking read of the row, refused at once (ER_LOCK_WAIT_TIMEOUT)
      // while a lock is held on it: seen in flight, whatever the load delays.
      let held = false;
      while (!ended && !held) {
        held = await raw.query("select id from unit_rows where id = 5 for update nowait").then(
          () => false,
          (error: { errno?: number }) => {
            if (error.errno !== 1205) throw error;
            return true;
          },
        );
      }
      await unit;
      expect(held).toBe(true);
      expect(await raw.query("select id from unit_rows where id = 5 for update nowait")).toEqual([{ id: 5 }]);
      await raw.query("delete from unit_rows where id = 5");
    } finally {
      await raw.close();
    }
  });

  it("with afterFirst, takes no precondition lock while its first statement waits", async () => {
    // Row 6 plays a thread's row, held by a removal; row 7 the put's parent.
    await executor().run(sql`insert into unit_rows values (6, 0), (7, 0)`);
    const raw = await openRaw("mysql", url);
    const holder = await openRaw("mysql", url);
    try {
      await holder.query("start transaction");
      await holder.query("select id from unit_rows where id = 6 for update");
      // Its outcome is taken at once: it fails as soon as the holder commits, before the test awaits it.
      const unit = dialect
        .atomically([sql`update unit_rows set v = v + 1 where id = 6`], { ...exists(7), afterFirst: true })
        .then(
          () => "committed",
          (error: unknown) => error,
        );
      // The unit's first statement waits for row 6 (seen in the process list, as a compound statement's part too).
      for (let waiting = false; !waiting; ) {
        waiting =
          (
            await raw.query(
              "select 1 from information_schema.processlist where db = database() and info like 'update unit_rows set v = v + 1 where id = 6%'",
            )
          ).length > 0;
      }
      // Before the fix, the precondition's share lock on row 7 was already held: refused at once.
      const parent = await holder.query("select id from unit_rows where id = 7 for update nowait").then(
        () => "free",
        (error: unknown) => `held: ${describeError(error)}`,
      );
      await holder.query("delete from unit_rows where id = 7");
      await holder.query("commit");
      expect(parent).toBe("free");
      expect(await unit).toBeInstanceOf(GoneError);
      expect((await values()).find(([id]) => id === 6)).toEqual([6, 0]);
      await raw.query("delete from unit_rows where id = 6");
    } finally {
      await holder.close();
      await raw.close();
    }
  });

  it("runs a deadlock victim again: two units locking the same rows in opposite orders both commit", async () => {
    const before = await values();
    const unit = (first: number, second: number) =>
      dialect.atomically([
        sql`update unit_rows set v = v + 1 where id = ${first}`,
        sql`do sleep(0.3)`,
        sql`update unit_rows set v = v + 1 where id = ${second}`,
      ]);
    await Promise.all([unit(1, 2), unit(2, 1)]);
    expect(await values()).toEqual(before.map(([id, v]) => [id, v + 2]));
  });
});

describe("mysql: which servers get compound units", () => {
  it("MariaDB from 10.1 (BEGIN NOT ATOMIC outside stored programs); MySQL and older MariaDB keep the transaction", () => {
    const versions = {
      "10.11.19-MariaDB-0+deb12u1": true,
      "11.4.2-MariaDB": true,
      "10.1.48-MariaDB-0+deb9u2": true,
      "5.5.5-10.11.6-MariaDB": true,
      "10.0.38-MariaDB": false,
      "8.0.36": false,
      "8.4.0-0ubuntu0.24.04.1": false,
      "5.7.25-TiDB-v7.5.0": false,
    };
    expect(Object.fromEntries(Object.keys(versions).map((v) => [v, runsCompoundStatements(v)]))).toEqual(versions);
  });
});
