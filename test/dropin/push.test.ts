// Recipe 2 with `drizzle-kit push` instead of migrations: push compares the database
// with the application's schema, which does not contain the saver's tables. With the
// fixture's tablesFilter (and, on PostgreSQL, our migrations table outside "public")
// push neither drops nor renames them.
import { join } from "node:path";
import { type SQL, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { DrizzleSaver, type SupportedDatabase } from "../../src/index.js";
import { type DialectName, freshDatabaseUrl } from "../helpers/databases.js";
import { openApp as openPgApp } from "./fixtures/own-migrations/pg/app.js";
import { openApp as openSqliteApp } from "./fixtures/own-migrations/sqlite/app.js";
import { drizzleKit, ROOT, readJournal, resumeFlow, startFlow, tempFolder } from "./support.js";

interface App {
  db: SupportedDatabase;
  rows(query: SQL): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}

// Not MariaDB: drizzle-kit 0.31 push exits with code 1 while pulling the schema of any
// MariaDB database that has a CHECK constraint, and MariaDB implements JSON columns (ours,
// and any application's) with one (drizzle-team/drizzle-orm#5550). Verified here on 10.11.
const FIXTURES: { dialect: DialectName; folder: "pg" | "sqlite"; open(url: string): App }[] = [
  { dialect: "postgres", folder: "pg", open: openPgApp },
  { dialect: "sqlite", folder: "sqlite", open: openSqliteApp },
];

describe.each(FIXTURES)("drizzle-kit push beside setup() on $dialect", ({ dialect, folder, open }) => {
  const scratch = tempFolder(`push-${folder}`);

  it("creates the application's tables and leaves the saver's alone", async () => {
    const url = await freshDatabaseUrl(dialect);
    // On PostgreSQL push inspects "public" only; our migrations table (and its serial
    // sequence, which tablesFilter does not cover) lives in a schema of its own.
    const options = dialect === "postgres" ? { migrationsSchema: "langgraph" } : {};
    const ours =
      dialect === "postgres" ? `"langgraph"."langgraph_checkpoint_migrations"` : "langgraph_checkpoint_migrations";
    let app = open(url);
    await new DrizzleSaver(app.db, options).setup();
    await startFlow(new DrizzleSaver(app.db, options), "ticket-9", "ticket #9");
    await app.close();

    const env = { DROPIN_OUT: scratch.out, DATABASE_URL: url, APP_RELEASE: "2" };
    // Without --force: a statement that could lose data would prompt, and fail here.
    expect(
      await drizzleKit(["push", "--config", `test/dropin/fixtures/own-migrations/${folder}/drizzle.config.ts`], env),
    ).toMatch(/Changes applied/);
    expect(
      await drizzleKit(["push", "--config", `test/dropin/fixtures/own-migrations/${folder}/drizzle.config.ts`], env),
    ).toMatch(/No changes detected/);

    app = open(url);
    try {
      const shipped = readJournal(join(ROOT, "migrations", folder)).entries.length;
      expect(Number((await app.rows(sql`select count(*) as n from ${sql.raw(ours)}`))[0].n)).toBe(shipped);
      await app.rows(sql`select count(*) as n from notes`);
      await resumeFlow(new DrizzleSaver(app.db, options), "ticket-9", "ticket #9", { approved: true, note: "pushed" });
    } finally {
      await app.close();
    }
  });
});
