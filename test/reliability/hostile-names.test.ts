import { emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { DrizzleSaver } from "../../src/index.js";
import { DIALECTS, freshDatabaseUrl } from "../helpers/databases.js";
import { openRaw } from "./helpers.js";

/**
 * Table-name options are identifiers, quoted wherever they are used: a name shaped
 * like SQL is just an odd name (the audit of issue 20 found no injection here).
 */

const NAMES = ['m"; drop table checkpoints; --', "m`; drop table checkpoints; --", "m'; drop table checkpoints; --"];

describe.each(DIALECTS)("SQL-shaped migrations table names on %s", (dialect) => {
  it("are names: setup() creates exactly that table and drops nothing", async () => {
    for (const migrationsTable of NAMES) {
      // A database each: a second migrations table is a second history, which would migrate again.
      const url = await freshDatabaseUrl(dialect);
      const saver = await DrizzleSaver.fromUrl(url, {
        migrationsTable,
        ...(dialect === "postgres" ? { migrationsSchema: `s${migrationsTable}` } : {}),
      });
      try {
        await saver.setup();
        expect((await saver.migrationStatus()).pending).toEqual([]);
        const config = { configurable: { thread_id: "t", checkpoint_ns: "" } };
        const stored = await saver.put(
          config,
          { ...emptyCheckpoint(), id: uuid6(-1) },
          { source: "input", step: -1, parents: {} },
          {},
        );
        expect((await saver.getTuple(stored))?.config).toEqual(stored);
      } finally {
        await saver.close();
      }
      await expectTables(url, migrationsTable);
    }
  });

  async function expectTables(url: string, migrationsTable: string) {
    const raw = await openRaw(dialect, url);
    try {
      const tables = await raw.query(
        dialect === "sqlite"
          ? "select name from sqlite_master where type = 'table'"
          : dialect === "postgres"
            ? "select table_name as name from information_schema.tables where table_schema not in ('pg_catalog', 'information_schema')"
            : "select table_name as name from information_schema.tables where table_schema = database()",
      );
      const names = tables.map((row) => String(row.name ?? row.NAME ?? row.TABLE_NAME));
      expect(names).toContain(migrationsTable);
      expect(names).toContain("checkpoints");
    } finally {
      await raw.close();
    }
  }
});
