/**
 * setup() on MySQL/MariaDB holds a named lock (GET_LOCK) while it migrates. Such names are
 * server-wide: named after the migrations table only, two applications migrating two
 * databases of one server waited for each other. The lock is per database: setup() on
 * another database goes on while one is held, and on the same database still waits.
 */
import { setTimeout as sleep } from "node:timers/promises";
import mysql from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { DrizzleSaver } from "../../src/index.js";
import { freshDatabaseUrl } from "../helpers/databases.js";
import { within } from "../reliability/helpers.js";

const databaseOf = (url: string) => new URL(url).pathname.slice(1);

/** The states of the sessions working in `database` (processlist), but the asking one. */
async function statesIn(watcher: mysql.Connection, database: string): Promise<string[]> {
  const [rows] = await watcher.query(
    "select state from information_schema.processlist where db = ? and id <> connection_id() and info is not null",
    [database],
  );
  return (rows as { state: string | null }[]).map((row) => String(row.state ?? ""));
}

/** Polls until `test` holds for the states of `database` (10 s at most). */
async function waitForStates(watcher: mysql.Connection, database: string, test: (states: string[]) => boolean) {
  for (let tries = 0; tries < 100; tries++) {
    const states = await statesIn(watcher, database);
    if (test(states)) return states;
    await sleep(100);
  }
  throw new Error(
    `the sessions of ${database} never reached the state looked for: ${await statesIn(watcher, database)}`,
  );
}

describe("the MySQL migration lock", () => {
  it("is per database: another database migrates meanwhile, the same one waits", { timeout: 90_000 }, async () => {
    const [first, second] = [await freshDatabaseUrl("mysql"), await freshDatabaseUrl("mysql")];
    const savers = await Promise.all([first, first, first, second].map((url) => DrizzleSaver.fromUrl(url)));
    const [migrated, holding, queued, other] = savers;
    await migrated.setup();
    // Holds the first database's migrations table: a setup() there takes the migration
    // lock, then waits on the table, keeping the lock until the table is unlocked.
    const blocker = await mysql.createConnection(first);
    const watcher = await mysql.createConnection(first);
    const settled: Promise<unknown>[] = [];
    try {
      await blocker.query("lock tables langgraph_checkpoint_migrations write");
      const held = holding.setup();
      settled.push(held);
      await waitForStates(watcher, databaseOf(first), (states) => states.some((s) => /table.*lock/i.test(s)));

      // Another database: setup() does not wait for the first one's lock.
      await within(other.setup(), 20_000, "setup() on another database");
      expect((await other.migrationStatus()).pending).toEqual([]);

      // The same database: setup() waits for the migration lock (state "User lock").
      const waiting = queued.setup();
      settled.push(waiting);
      await waitForStates(watcher, databaseOf(first), (states) => states.includes("User lock"));

      await blocker.query("unlock tables");
      await within(Promise.all([held, waiting]), 20_000, "the first database's setup() calls");
      expect((await queued.migrationStatus()).pending).toEqual([]);
    } finally {
      await blocker.query("unlock tables").catch(() => {});
      await Promise.allSettled(settled);
      await Promise.all([blocker.end(), watcher.end(), ...savers.map((saver) => saver.close())]);
    }
  });
});
