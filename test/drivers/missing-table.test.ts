/**
 * isMissingTableError against each database's real errors: a read of a table that does
 * not exist is "missing" (directly and as drizzle wraps it), any other failure is not,
 * so a caller that treats a missing table as "nothing there" never hides one.
 */
import postgres from "postgres";
import { describe, expect, it } from "vitest";
import { DrizzleSaver } from "../../src/index.js";
import { isMissingTableError } from "../../src/sql/missing-table.js";
import { DIALECTS, freshDatabaseUrl } from "../helpers/databases.js";
import { openRaw } from "../helpers/raw.js";

async function failureOf(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error("expected a failure");
}

describe.each(DIALECTS)("isMissingTableError on %s", (dialect) => {
  it("is true for a table that does not exist, from the driver and from a saver call, and false otherwise", async () => {
    const url = await freshDatabaseUrl(dialect);
    const raw = await openRaw(dialect, url);
    const saver = await DrizzleSaver.fromUrl(url);
    try {
      expect(isMissingTableError(await failureOf(() => raw.query("select 1 from no_such_table")))).toBe(true);
      // The saver's tables are not created yet: the error as a saver call passes it on.
      const fromSaver = await failureOf(() => saver.getTuple({ configurable: { thread_id: "t" } }));
      expect(isMissingTableError(fromSaver)).toBe(true);
      expect(
        isMissingTableError(await failureOf(() => raw.query("select no_such_column from (select 1 as a) t"))),
      ).toBe(false);
      expect(isMissingTableError(await failureOf(() => raw.query("select * from")))).toBe(false);
    } finally {
      await saver.close();
      await raw.close();
    }
  });
});

describe("isMissingTableError on PostgreSQL permissions", () => {
  it("is false for a table the role may not read", async () => {
    const url = await freshDatabaseUrl("postgres");
    const admin = postgres(url, { max: 1, onnotice: () => {} });
    const role = `reader_${Date.now()}`;
    try {
      await admin.unsafe(`create table private_items (id int); create role ${role} login`);
      const limited = new URL(url);
      limited.username = role;
      const reader = postgres(limited.toString(), { max: 1, onnotice: () => {} });
      try {
        const error = await failureOf(() => reader.unsafe("select * from private_items"));
        expect(String(error)).toMatch(/permission denied/);
        expect(isMissingTableError(error)).toBe(false);
      } finally {
        await reader.end();
      }
    } finally {
      await admin.unsafe(`drop table private_items; drop role ${role}`);
      await admin.end();
    }
  });
});
