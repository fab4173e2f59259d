/**
 * A mysql2 pool or connection made with `rowsAsArray: true` returns every row as an
 * array, and the saver reads columns by name: a tuple failed to read with a TypeError,
 * `searchThreads` answered threads whose every field was null, `setup()` failed to
 * "take the migration lock". Such a client is refused before anything runs.
 */
import { drizzle } from "drizzle-orm/mysql2";
import mysql from "mysql2/promise";
import { afterAll, describe, expect, it } from "vitest";
import { DrizzleSaver, DrizzleStore, UnsupportedDriverError } from "../../src/index.js";
import { freshDatabaseUrl } from "../helpers/databases.js";

const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closers) await close();
});

describe("a mysql2 client with rowsAsArray", () => {
  it.each(["pool", "connection"] as const)(
    "as a %s is refused by the saver and the store, naming the option",
    async (kind) => {
      const uri = await freshDatabaseUrl("mysql");
      let client: mysql.Pool | mysql.Connection;
      if (kind === "pool") {
        const pool = mysql.createPool({ uri, rowsAsArray: true });
        closers.push(() => pool.end());
        client = pool;
      } else {
        const connection = await mysql.createConnection({ uri, rowsAsArray: true });
        closers.push(() => connection.end());
        client = connection;
      }
      const db = drizzle(client);
      for (const make of [() => new DrizzleSaver(db), () => new DrizzleStore(db)]) {
        expect(make).toThrow(UnsupportedDriverError);
        expect(make).toThrow(/rowsAsArray/);
      }
    },
  );

  it("set to false works as usual", async () => {
    const pool = mysql.createPool({ uri: await freshDatabaseUrl("mysql"), rowsAsArray: false });
    closers.push(() => pool.end());
    const saver = new DrizzleSaver(drizzle(pool));
    await saver.setup();
    expect(await saver.searchThreads({})).toEqual([]);
  });
});
