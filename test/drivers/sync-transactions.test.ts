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
const one = betterSqliteExecutor(drizzle(first));
const other = betterSqliteExecutor(drizzle(second));
const count = () => (first.prepare("select count(*) as n from t").get() as { n: number }).n;

afterAll(() => {
  first.close();
  second.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("better-sqlite3: a transaction run at once (no promise per statement)", () => {
  it("commits before it returns, without yielding to the event loop", () => {
    const done = one.transactionNow?.((tx) => {
      tx.run(sql`insert into t (x) values (1)`);
      return tx.all(sql`select x from t`).length;
    });
    expect(done).toEqual({ result: 1 });
    expect(second.inTransaction || first.inTransaction).toBe(false);
    expect(count()).toBe(1);
  });

  it("rolls back and rethrows the work's own error", () => {
    expect(() =>
      one.transactionNow?.((tx) => {
        tx.run(sql`insert into t (x) values (2)`);
        throw new Error("work failed");
      }),
    ).toThrow("work failed");
    expect(first.inTransaction).toBe(false);
    expect(count()).toBe(1);
  });

  it("steps aside while another connection of this process holds the file's transaction", async () => {
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const open = other.transaction(async (tx) => {
      await tx.run(sql`insert into t (x) values (3)`);
      await held;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(one.transactionNow?.(() => "ran")).toBeUndefined();
    release();
    await open;
    expect(one.transactionNow?.(() => "ran")).toEqual({ result: "ran" });
    expect(count()).toBe(2);
  });
});
