/**
 * Recipe A for the store: the application declares the table with `storeTables({ prefix })`
 * in its own schema and creates it with its own drizzle-kit (here drizzle-kit's API, as
 * `drizzle-kit generate` would), passes it as `tables`, and `setup()` leaves it alone.
 */
import {
  generateDrizzleJson,
  generateMigration,
  generateMySQLDrizzleJson,
  generateMySQLMigration,
  generateSQLiteDrizzleJson,
  generateSQLiteMigration,
} from "drizzle-kit/api";
import { describe, expect, it } from "vitest";
import { DrizzleStore, type StoreTables } from "../../src/index.js";
import { storeTables as mysqlStoreTables } from "../../src/schema/mysql.js";
import { storeTables as pgStoreTables } from "../../src/schema/pg.js";
import { storeTables as sqliteStoreTables } from "../../src/schema/sqlite.js";
import { DIALECTS, type DialectName, freshDatabaseUrl } from "../helpers/databases.js";
import { openRaw } from "../helpers/raw.js";

async function ddl(dialect: DialectName): Promise<{ tables: StoreTables; statements: string[] }> {
  if (dialect === "sqlite") {
    const tables = sqliteStoreTables({ prefix: "app_" });
    const statements = await generateSQLiteMigration(
      await generateSQLiteDrizzleJson({}),
      await generateSQLiteDrizzleJson(tables),
    );
    return { tables, statements };
  }
  if (dialect === "postgres") {
    const tables = pgStoreTables({ prefix: "app_" });
    const statements = await generateMigration(generateDrizzleJson({}), generateDrizzleJson(tables));
    return { tables, statements };
  }
  const tables = mysqlStoreTables({ prefix: "app_" });
  const statements = await generateMySQLMigration(
    await generateMySQLDrizzleJson({}),
    await generateMySQLDrizzleJson(tables),
  );
  return { tables, statements };
}

describe.each(DIALECTS)("the store on the application's own table on %s", (dialect) => {
  it("works on app_store_items, and setup() creates nothing", async () => {
    const url = await freshDatabaseUrl(dialect);
    const { tables, statements } = await ddl(dialect);
    const raw = await openRaw(dialect, url);
    const store = await DrizzleStore.fromUrl(url, { tables });
    try {
      for (const statement of statements) await raw.query(statement);
      expect(await store.setup()).toEqual([]);
      await store.put(["tenant", "acme"], "k", { v: 1 });
      await store.put(["tenant", "acme-corp"], "k", { v: 2 });
      expect((await store.search(["tenant", "acme"])).map((item) => item.value)).toEqual([{ v: 1 }]);
      expect(Number((await raw.query("select count(*) as n from app_store_items"))[0].n)).toBe(2);
      const ours = await raw.query(
        dialect === "sqlite"
          ? "select name from sqlite_master where name = 'store_items'"
          : dialect === "postgres"
            ? "select tablename as name from pg_tables where tablename = 'store_items'"
            : "select table_name as name from information_schema.tables where table_schema = database() and table_name = 'store_items'",
      );
      expect(ours).toEqual([]);
    } finally {
      await store.close();
      await raw.close();
    }
  });
});
