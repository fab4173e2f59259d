// setup() on MySQL holds a named lock (GET_LOCK) while it migrates. MySQL 8 refuses names
// over 64 characters, and a prefixed migrations table made the name longer: the name is
// a digest (of the database's and the table's names: lock names are server-wide, see
// mysql-lock-scope.test.ts), and setup() still waits for whoever holds it.
import { setTimeout as sleep } from "node:timers/promises";
import mysql from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { migrationLockName } from "../../src/dialects/mysql-migrations.js";
import { DrizzleSaver } from "../../src/index.js";
import { freshDatabaseUrl } from "../helpers/databases.js";

const LONG_TABLE = "my_application_langgraph_checkpoint_migrations";

describe("the MySQL migration lock's name", () => {
  it("names the database and the table, in at most 64 characters always", () => {
    const name = migrationLockName("app", "langgraph_checkpoint_migrations");
    expect(name).toMatch(/^langgraph-checkpoint-drizzle:/);
    expect([...name].length).toBeLessThanOrEqual(64);
    expect(migrationLockName("app", "langgraph_checkpoint_migrations")).toBe(name);
    expect(migrationLockName("app2", "langgraph_checkpoint_migrations")).not.toBe(name);
    const long = migrationLockName("app", LONG_TABLE);
    expect([...long].length).toBeLessThanOrEqual(64);
    expect(migrationLockName("app", `${LONG_TABLE}_2`)).not.toBe(long);
    // The two names never run together: ("a_b", "c") and ("a", "b_c") are other locks.
    expect(migrationLockName("a_b", "c")).not.toBe(migrationLockName("a", "b_c"));
    expect([...migrationLockName("é".repeat(64), "é".repeat(60))].length).toBeLessThanOrEqual(64);
  });

  it("is the lock setup() waits for, with a long migrations table", { timeout: 60_000 }, async () => {
    const url = await freshDatabaseUrl("mysql");
    const lock = migrationLockName(new URL(url).pathname.slice(1), LONG_TABLE);
    // One connection: a named lock belongs to the connection that took it.
    const holder = await mysql.createConnection(url);
    const saver = await DrizzleSaver.fromUrl(url, { migrationsTable: LONG_TABLE });
    try {
      const [rows] = await holder.query("select get_lock(?, 5) as held", [lock]);
      expect(Number((rows as { held: unknown }[])[0].held)).toBe(1);
      let done = false;
      const setup = saver.setup().then(() => {
        done = true;
      });
      // setup() shows up waiting for the held lock (MySQL/MariaDB's state "User lock").
      let waiting = 0;
      for (let tries = 0; tries < 100 && waiting === 0 && !done; tries++) {
        await sleep(100);
        const [found] = await holder.query(
          "select count(*) as n from information_schema.processlist where state = 'User lock' and info like '%get_lock%'",
        );
        waiting = Number((found as { n: unknown }[])[0].n);
      }
      expect(done).toBe(false);
      expect(waiting).toBe(1);
      await holder.query("select release_lock(?)", [lock]);
      await setup;
      expect((await saver.migrationStatus()).pending).toEqual([]);
    } finally {
      await saver.close();
      await holder.end();
    }
  });
});
