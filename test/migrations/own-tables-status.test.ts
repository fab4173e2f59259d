/**
 * migrationStatus() of a saver given the application's own `tables` (recipe A): the
 * application's drizzle-kit migrates them and setup() applies nothing, so none of the
 * shipped migrations is pending. It said every one was, forever (a CI gate on `pending`
 * never passed). It now says the application manages the migrations; a saver on its own
 * tables says it manages them.
 */
import { describe, expect, it } from "vitest";
import { type CheckpointTables, DrizzleSaver } from "../../src/index.js";
import { checkpointTables as mysqlTables } from "../../src/schema/mysql.js";
import { checkpointTables as pgTables } from "../../src/schema/pg.js";
import { checkpointTables as sqliteTables } from "../../src/schema/sqlite.js";
import { DIALECTS, type DialectName, freshDatabaseUrl } from "../helpers/databases.js";

const TABLES: Record<DialectName, () => CheckpointTables> = {
  sqlite: () => sqliteTables({ prefix: "app_" }),
  postgres: () => pgTables({ prefix: "app_" }),
  mysql: () => mysqlTables({ prefix: "app_" }),
};

describe.each(DIALECTS)("migrationStatus() on %s", (dialect) => {
  it("with the application's tables: managed by the application, nothing pending", async () => {
    const url = await freshDatabaseUrl(dialect);
    const saver = await DrizzleSaver.fromUrl(url, { tables: TABLES[dialect]() });
    try {
      expect(await saver.setup()).toEqual([]);
      expect(await saver.migrationStatus()).toEqual({ managedBy: "application", applied: [], pending: [] });
    } finally {
      await saver.close();
    }
  });

  it("with its own tables: managed by the saver, pending until setup()", async () => {
    const url = await freshDatabaseUrl(dialect);
    const saver = await DrizzleSaver.fromUrl(url);
    try {
      const before = await saver.migrationStatus();
      expect(before.managedBy).toBe("saver");
      expect(before.applied).toEqual([]);
      expect(before.pending.length).toBeGreaterThan(0);
      await saver.setup();
      const after = await saver.migrationStatus();
      expect(after).toEqual({ managedBy: "saver", applied: before.pending, pending: [] });
    } finally {
      await saver.close();
    }
  });
});
