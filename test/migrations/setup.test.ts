import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { promisify } from "node:util";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { DrizzleSaver } from "../../src/index.js";
import { DIALECTS, type DialectName, freshDatabaseUrl } from "../helpers/databases.js";

const run = promisify(execFile);
const folder = { sqlite: "sqlite", postgres: "pg", mysql: "mysql" } as const;

function journalEntries(dialect: DialectName): number {
  const journal = JSON.parse(readFileSync(`migrations/${folder[dialect]}/meta/_journal.json`, "utf8"));
  return journal.entries.length;
}

/** Rows of our migrations table, read through a plain query on a new connection. */
async function appliedMigrations(url: string, table = "langgraph_checkpoint_migrations"): Promise<number> {
  const saver = await DrizzleSaver.fromUrl(url);
  try {
    const rows = await (saver as unknown as { dialect: { query(q: unknown): Promise<unknown[]> } }).dialect.query(
      sql`select hash from ${sql.identifier(table)}`,
    );
    return rows.length;
  } finally {
    await saver.close();
  }
}

describe.each(DIALECTS)("setup() on %s", (dialect) => {
  it("is idempotent", async () => {
    const url = await freshDatabaseUrl(dialect);
    const saver = await DrizzleSaver.fromUrl(url);
    await saver.setup();
    await saver.setup();
    await saver.put(
      { configurable: { thread_id: "t" } },
      { v: 4, id: "1", ts: "", channel_values: {}, channel_versions: {}, versions_seen: {} },
      { source: "input", step: -1, parents: {} },
      {},
    );
    await saver.setup();
    expect(await saver.getTuple({ configurable: { thread_id: "t" } })).toBeDefined();
    await saver.close();
    expect(await appliedMigrations(url)).toBe(journalEntries(dialect));
  });

  it("applies every migration exactly once when several processes call it at once", async () => {
    const url = await freshDatabaseUrl(dialect);
    const processes = Array.from({ length: 4 }, () =>
      run(process.execPath, ["--import", "tsx", "test/helpers/run-setup.ts", url], { timeout: 60_000 }),
    );
    await Promise.all(processes);
    expect(await appliedMigrations(url)).toBe(journalEntries(dialect));
  });

  it("records migrations in the table it is given", async () => {
    const url = await freshDatabaseUrl(dialect);
    const saver = await DrizzleSaver.fromUrl(url, { migrationsTable: "my_checkpoint_migrations" });
    await saver.setup();
    await saver.close();
    expect(await appliedMigrations(url, "my_checkpoint_migrations")).toBe(journalEntries(dialect));
  });
});
