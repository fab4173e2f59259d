import { describe, expect, it } from "vitest";
import { DrizzleSaver } from "../../src/index.js";
import { DIALECTS, freshDatabaseUrl } from "../helpers/databases.js";
import { cli, cliProcess, ensureBuilt, expectOneLineError, journalTags, rawQuery } from "./helpers.js";

describe.each(DIALECTS)("migrate in CI on %s", { timeout: 300_000 }, (dialect) => {
  beforeAll(async () => {
    await ensureBuilt();
  }, 15 * 60_000);

  it("two jobs migrating one empty database at once both succeed and apply each migration once", async () => {
    const url = await freshDatabaseUrl(dialect);
    const [a, b] = await Promise.all([cliProcess(["migrate", "--url", url]), cliProcess(["migrate", "--url", url])]);
    for (const run of [a, b]) {
      expect(run.code, JSON.stringify(run)).toBe(0);
      expect(run.stdout).toContain("the database is up to date");
    }
    const rows = await rawQuery(dialect, url, "select created_at from langgraph_checkpoint_migrations");
    expect(rows).toHaveLength(journalTags(dialect).length);
    expect(new Set(rows.map((row) => Number(row.created_at))).size).toBe(journalTags(dialect).length);

    const saver = await DrizzleSaver.fromUrl(url);
    try {
      const status = await saver.migrationStatus();
      expect(status.pending).toEqual([]);
      expect(status.applied.map((m) => m.tag)).toEqual(journalTags(dialect));
    } finally {
      await saver.close();
    }

    const again = await cli(["migrate", "--url", url, "--json"]);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).applied).toEqual([]);
  });

  it("a failing migration exits non-zero and names the migration", async () => {
    const url = await freshDatabaseUrl(dialect);
    // A table of the same name is in the way of the first migration.
    await rawQuery(dialect, url, "create table checkpoint_blobs (something integer)");
    const [first] = journalTags(dialect);
    const result = await cli(["migrate", "--url", url]);
    expectOneLineError(result, 1, new RegExp(`^error: migration ${first} failed: .*checkpoint_blobs.*already exists`));

    const saver = await DrizzleSaver.fromUrl(url);
    try {
      expect((await saver.migrationStatus()).applied).toEqual([]);
    } finally {
      await saver.close();
    }
  });
});
