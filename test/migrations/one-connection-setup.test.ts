/**
 * setup() run again on a database behind one connection: PGlite answers one query at a
 * time, so a statement sent outside the migration's open transaction waits for that
 * transaction forever. The second setup() (tables present, migrations recorded) used to
 * do that when it resolved the migrations table's schema again, and hung.
 */
import { PGlite } from "@electric-sql/pglite";
import { drizzle } from "drizzle-orm/pglite";
import { describe, expect, it } from "vitest";
import { DrizzleSaver, DrizzleStore } from "../../src/index.js";

describe("setup() again on PGlite", () => {
  it("returns at once with nothing to apply, for the saver and the store", { timeout: 30_000 }, async () => {
    const client = new PGlite();
    const db = drizzle(client);
    try {
      const saver = new DrizzleSaver(db);
      expect((await saver.setup()).length).toBeGreaterThan(0);
      expect(await saver.setup()).toEqual([]);
      expect(await new DrizzleStore(db).setup()).toEqual([]);
      expect((await saver.migrationStatus()).pending).toEqual([]);
    } finally {
      await client.close();
    }
  });
});
