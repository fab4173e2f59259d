// setup() on MySQL holds a named lock (GET_LOCK) while it migrates. MySQL 8 refuses names
// over 64 characters, and a prefixed migrations table made the name longer: the name is
// then a digest, and setup() still waits for whoever holds it.
import { setTimeout as sleep } from "node:timers/promises";
import mysql from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { migrationLockName } from "../../src/dialects/mysql-migrations.js";
import { DrizzleSaver } from "../../src/index.js";
import { freshDatabaseUrl } from "../helpers/databases.js";

const LONG_TABLE = "my_application_langgraph_checkpoint_migrations";

describe("the MySQL migration lock's name", () => {
  it("is the table's name as every release named it when it fits, and at most 64 characters always", () => {
    expect(migrationLockName("langgraph_checkpoint_migrations")).toBe(
      "langgraph-checkpoint-drizzle:langgraph_checkpoint_migrations",
    );
    const long = migrationLockName(LONG_TABLE);
    expect([...long].length).toBeLessThanOrEqual(64);
    expect(migrationLockName(`${LONG_TABLE}_2`)).not.toBe(long);
    expect([...migrationLockName("é".repeat(60))].length).toBeLessThanOrEqual(64);
  });

  it("is the lock setup() waits for, with a long migrations table", { timeout: 60_000 }, async () => {
    const url = await freshDatabaseUrl("mysql");
    // One connection: a named lock belongs to the connection that took it.
    const holder = await mysql.createConnection(url);
    const saver = await DrizzleSaver.fromUrl(url, { migrationsTable: LONG_TABLE });
    try {
      const [rows] = await holder.query("select get_lock(?, 5) as held", [migrationLockName(LONG_TABLE)]);
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
      await holder.query("select release_lock(?)", [migrationLockName(LONG_TABLE)]);
      await setup;
      expect((await saver.migrationStatus()).pending).toEqual([]);
    } finally {
      await saver.close();
      await holder.end();
    }
  });
});
