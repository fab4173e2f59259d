import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { betterSqliteExecutor } from "../../src/drivers/better-sqlite3.js";

const dir = mkdtempSync(join(tmpdir(), "sync-tx-"));
const file = join(dir, "sync.db");
const first = new Database(file);
const second = new Database(file);
first.exec("create table t (x integer primary key)");
const begun: string[] = [];
const one = betterSqliteExecutor(drizzle(first, { logger: { logQuery: (query) => begun.push(query) } }));
const other = betterSqliteExecutor(drizzle(second));
const count = () => (first.prepare("select count(*) as n from t").get() as { n: number }).n;
const transactions = () => begun.filter((query) => /^begin/i.test(query)).length;

afterAll(() => {
  first.close();
  second.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("better-sqlite3: units grouped into one transaction (group commit)", () => {
  it("commits the units queued in one turn together, each running without yielding", async () => {
    begun.length = 0;
    const results = await Promise.all(
      [1, 2, 3].map((x) =>
        one.transactionGrouped?.((tx) => {
          tx.run(sql`insert into t (x) values (${x})`);
          return tx.all(sql`select x from t`).length;
        }),
      ),
    );
    // Each unit sees the ones before it: they ran one after another in one transaction.
    expect(results).toEqual([1, 2, 3]);
    expect(transactions()).toBe(1);
    expect(first.inTransaction).toBe(false);
    expect(count()).toBe(3);
  });

  it("rolls back a failing unit alone, with its own error, and commits the others", async () => {
    const outcomes = await Promise.allSettled([
      one.transactionGrouped?.((tx) => tx.run(sql`insert into t (x) values (4)`)),
      one.transactionGrouped?.((tx) => {
        tx.run(sql`insert into t (x) values (5)`);
        throw new Error("work failed");
      }),
      one.transactionGrouped?.((tx) => tx.run(sql`insert into t (x) values (6)`)),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((outcomes[1] as PromiseRejectedResult).reason.message).toBe("work failed");
    expect(first.inTransaction).toBe(false);
    const rows = first.prepare("select x from t order by x").all() as { x: number }[];
    expect(rows.map((row) => row.x)).toEqual([1, 2, 3, 4, 6]);
  });

  it("waits while another connection of this process holds the file's transaction", async () => {
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const open = other.transaction(async (tx) => {
      await tx.run(sql`insert into t (x) values (7)`);
      await held;
    });
    let ran = false;
    const grouped = one.transactionGrouped?.((tx) => {
      ran = true;
      return tx.all(sql`select x from t where x = 7`).length;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(ran).toBe(false);
    release();
    await open;
    // It ran after the other transaction committed, so it sees its row.
    expect(await grouped).toBe(1);
  });
});
