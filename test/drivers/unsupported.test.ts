import { drizzle as mysqlProxy } from "drizzle-orm/mysql-proxy";
import { drizzle as pgProxy } from "drizzle-orm/pg-proxy";
import { drizzle as sqliteProxy } from "drizzle-orm/sqlite-proxy";
import { describe, expect, it } from "vitest";
import { DrizzleSaver, type SupportedDatabase, UnsupportedDriverError } from "../../src/index.js";

/** Every statement the driver was asked to run: there must be none. */
const sent: string[] = [];
const record = async (query: string) => {
  sent.push(query);
  return { rows: [] };
};

// drizzle's proxy drivers are real drivers whose transport is a callback; the saver does not support them.
const unsupported: [string, string, () => unknown][] = [
  ["sqlite-proxy", "SQLiteRemoteSession", () => sqliteProxy(record)],
  ["pg-proxy", "PgRemoteSession", () => pgProxy(record)],
  ["mysql-proxy", "MySqlRemoteSession", () => mysqlProxy(record)],
];

describe("a driver the saver does not support", () => {
  it.each(unsupported)(
    "%s fails in the constructor, naming it and the supported drivers, running nothing",
    (_, session, make) => {
      let error: unknown;
      try {
        new DrizzleSaver(make() as SupportedDatabase);
      } catch (caught) {
        error = caught;
      }
      expect(error).toBeInstanceOf(UnsupportedDriverError);
      const message = (error as Error).message;
      expect(message).toContain(session);
      for (const driver of ["postgres", "pg", "@electric-sql/pglite", "mysql2", "better-sqlite3", "@libsql/client"]) {
        expect(message).toContain(driver);
      }
      expect(sent).toEqual([]);
    },
  );

  it("something that is not a drizzle database fails the same way", () => {
    expect(() => new DrizzleSaver({} as SupportedDatabase)).toThrow(UnsupportedDriverError);
    expect(() => new DrizzleSaver(null as unknown as SupportedDatabase)).toThrow(/supported drivers: postgres, pg/);
  });
});
