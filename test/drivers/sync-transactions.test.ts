import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { uuid6 } from "@langchain/langgraph-checkpoint";
import Database from "better-sqlite3";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { betterSqliteExecutor } from "../../src/drivers/better-sqlite3.js";
import { DrizzleSaver, MissingParentError } from "../../src/index.js";
import { checkpointOf } from "../reliability/helpers.js";

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
const savepoints = () => begun.filter((query) => /^savepoint/i.test(query));

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
    // No savepoint while no unit fails.
    expect(savepoints()).toEqual([]);
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

  it("undoes a unit failing in SQL alone, after the others' statements ran, and runs the others once in effect", async () => {
    const before = count();
    const seen: number[][] = [];
    const outcomes = await Promise.allSettled([
      one.transactionGrouped?.((tx) => {
        tx.run(sql`insert into t (x) values (8)`);
        return tx.all(sql`select x from t where x >= 8`).length;
      }),
      // A primary-key conflict with the row inserted just before it, in the same group.
      one.transactionGrouped?.((tx) => {
        tx.run(sql`insert into t (x) values (9)`);
        tx.run(sql`insert into t (x) values (8)`);
      }),
      one.transactionGrouped?.((tx) => {
        tx.run(sql`insert into t (x) values (10)`);
        const rows = tx.all(sql`select x from t where x >= 8 order by x`) as { x: number }[];
        seen.push(rows.map((row) => row.x));
        return rows.length;
      }),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((outcomes[1] as PromiseRejectedResult).reason.message).toMatch(/UNIQUE constraint failed/);
    // The group ran again unit by unit: the last unit's result is from that run, without 9.
    expect((outcomes[0] as PromiseFulfilledResult<number>).value).toBe(1);
    expect((outcomes[2] as PromiseFulfilledResult<number>).value).toBe(2);
    expect(seen.at(-1)).toEqual([8, 10]);
    expect(first.inTransaction).toBe(false);
    expect(count()).toBe(before + 2);
    const rows = first.prepare("select x from t where x >= 8 order by x").all() as { x: number }[];
    expect(rows.map((row) => row.x)).toEqual([8, 10]);
  });

  it("runs a unit alone in its turn without a savepoint; its failure writes nothing and rejects with its error", async () => {
    begun.length = 0;
    const before = count();
    expect(await one.transactionGrouped?.((tx) => tx.run(sql`insert into t (x) values (11)`))).toBe(1);
    await expect(
      one.transactionGrouped?.((tx) => {
        tx.run(sql`insert into t (x) values (12)`);
        throw new Error("alone and failed");
      }),
    ).rejects.toThrow("alone and failed");
    expect(savepoints()).toEqual([]);
    expect(transactions()).toBe(2);
    expect(first.inTransaction).toBe(false);
    expect(count()).toBe(before + 1);
    // The connection goes on as before.
    expect(await one.transactionGrouped?.((tx) => tx.run(sql`insert into t (x) values (12)`))).toBe(1);
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

  it("a saver's calls in one turn: the one refused writes nothing, the others land with theirs", async () => {
    const sqlite = new Database(join(dir, "saver.db"));
    sqlite.pragma("journal_mode = WAL");
    const queries: string[] = [];
    const saver = new DrizzleSaver(drizzle(sqlite, { logger: { logQuery: (query) => queries.push(query) } }));
    try {
      await saver.setup();
      const put = (thread: string) =>
        saver.put(
          { configurable: { thread_id: thread, checkpoint_ns: "" } },
          checkpointOf(uuid6(-1), { a: thread }, { a: "1.a" }),
          { source: "loop", step: 0, parents: {} },
          { a: "1.a" },
        );
      const kept = await put("kept");
      const gone = await put("gone");
      await saver.deleteThread("gone");
      queries.length = 0;
      const outcomes = await Promise.allSettled([
        saver.putWrites(kept, [["a", "w1"]], "task-1"),
        saver.putWrites(gone, [["a", "late"]], "task-2"),
        put("new"),
      ]);
      expect(outcomes.map((outcome) => outcome.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
      expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(MissingParentError);
      // One group: run bare, rolled back, run again unit by unit.
      expect(queries.filter((query) => /^begin/i.test(query))).toHaveLength(2);
      expect(queries.filter((query) => /^savepoint/i.test(query))).toHaveLength(3);
      const rows = (table: string) =>
        sqlite.prepare(`select thread_id from ${table} order by thread_id`).all() as { thread_id: string }[];
      expect(rows("checkpoint_writes").map((row) => row.thread_id)).toEqual(["kept"]);
      expect(rows("checkpoints").map((row) => row.thread_id)).toEqual(["kept", "new"]);
      expect(
        (await saver.getTuple({ configurable: { thread_id: "new", checkpoint_ns: "" } }))?.checkpoint.channel_values,
      ).toEqual({ a: "new" });
    } finally {
      sqlite.close();
    }
  });
});
