// Drop-in, recipe 2: the application keeps its own drizzle migrations (its folder,
// drizzle's default migrations table) and lets the saver manage its tables with
// setup() (our migrations table). Both histories move on and stay whole. Item 2 of issue 6.
import { cpSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type SQL, sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { DrizzleSaver, type MigrationInfo, type SupportedDatabase } from "../../src/index.js";
import { migrate } from "../../src/savers/migrations/migrate.js";
import { type DialectName, freshDatabaseUrl } from "../helpers/databases.js";
import { openApp as openMysqlApp } from "./fixtures/own-migrations/mysql/app.js";
import { openApp as openPgApp } from "./fixtures/own-migrations/pg/app.js";
import { openApp as openSqliteApp } from "./fixtures/own-migrations/sqlite/app.js";
import { drizzleKit, migrationFiles, ROOT, readJournal, resumeFlow, startFlow, tempFolder } from "./support.js";

type Row = Record<string, unknown>;

interface App {
  db: SupportedDatabase;
  migrate(folder: string): Promise<void>;
  appMigrationsTable: string;
  rows(query: SQL): Promise<Row[]>;
  run(query: SQL): Promise<void>;
  close(): Promise<void>;
}

const FIXTURES: { dialect: DialectName; folder: "pg" | "mysql" | "sqlite"; open(url: string): App }[] = [
  { dialect: "postgres", folder: "pg", open: openPgApp },
  { dialect: "mysql", folder: "mysql", open: openMysqlApp },
  { dialect: "sqlite", folder: "sqlite", open: openSqliteApp },
];

const OUR_TABLE = "langgraph_checkpoint_migrations";

/**
 * The package's next release, simulated: a copy of the shipped migrations plus one
 * new migration (a table and an index on `checkpoints`), with a later journal entry.
 */
function nextRelease(folder: "pg" | "mysql" | "sqlite", into: string): { when: number[] } {
  cpSync(join(ROOT, "migrations", folder), into, { recursive: true });
  const journal = readJournal(into);
  const last = journal.entries[journal.entries.length - 1];
  const idx = journal.entries.length;
  const tag = `${String(idx).padStart(4, "0")}_dropin_probe`;
  const q = (name: string) => (folder === "pg" ? `"${name}"` : `\`${name}\``);
  const statements = [
    `CREATE TABLE ${q("checkpoint_dropin_probe")} (${q("id")} integer PRIMARY KEY NOT NULL, ${q("note")} text)`,
    `CREATE INDEX ${q("checkpoints_dropin_probe_idx")} ON ${q("checkpoints")} (${q("parent_checkpoint_id")})`,
  ];
  writeFileSync(join(into, `${tag}.sql`), `${statements.join(";\n--> statement-breakpoint\n")};\n`);
  journal.entries.push({ ...last, idx, when: last.when + 1000, tag });
  writeFileSync(join(into, "meta", "_journal.json"), JSON.stringify(journal, null, 2));
  return { when: journal.entries.map((entry) => entry.when) };
}

/**
 * The saver of that next release: setup() applies a given migrations folder, exactly
 * as DrizzleSaver.setup() applies the shipped one (same dialect code, same table).
 */
class NextReleaseSaver extends DrizzleSaver {
  constructor(
    db: SupportedDatabase,
    private readonly release: string,
  ) {
    super(db);
  }

  override async setup(): Promise<MigrationInfo[]> {
    await migrate(this.dialect, { migrationsFolder: this.release, migrationsTable: OUR_TABLE });
    return [];
  }
}

function tableExists(dialect: DialectName, table: string): SQL {
  if (dialect === "postgres")
    return sql`select count(*) as n from pg_tables where schemaname = 'public' and tablename = ${table}`;
  if (dialect === "mysql")
    return sql`select count(*) as n from information_schema.tables where table_schema = database() and table_name = ${table}`;
  return sql`select count(*) as n from sqlite_master where type = 'table' and name = ${table}`;
}

function indexExists(dialect: DialectName, index: string): SQL {
  if (dialect === "postgres") return sql`select count(*) as n from pg_indexes where indexname = ${index}`;
  if (dialect === "mysql")
    return sql`select count(distinct index_name) as n from information_schema.statistics where table_schema = database() and index_name = ${index}`;
  return sql`select count(*) as n from sqlite_master where type = 'index' and name = ${index}`;
}

describe.each(FIXTURES)("an application with its own drizzle migrations on $dialect", ({ dialect, folder, open }) => {
  const appMigrations = tempFolder(`app-${folder}`);
  const ours = tempFolder(`ours-${folder}`);
  const config = `test/dropin/fixtures/own-migrations/${folder}/drizzle.config.ts`;
  let url = "";

  beforeAll(async () => {
    url = await freshDatabaseUrl(dialect);
  });

  /** created_at of every row of a migrations table, as numbers, sorted. */
  async function recorded(app: App, table: string): Promise<number[]> {
    const rows = await app.rows(sql`select created_at from ${sql.raw(table)}`);
    return rows.map((row) => Number(row.created_at)).sort((a, b) => a - b);
  }
  const count = async (app: App, query: SQL) => Number((await app.rows(query))[0].n);

  it("applies every migration of both histories exactly once across releases", async () => {
    // Release 1: the application migrates, then the saver sets itself up; a conversation starts.
    await drizzleKit(["generate", "--config", config, "--name", "users"], {
      DROPIN_OUT: appMigrations.out,
      APP_RELEASE: "1",
    });
    let app = open(url);
    await app.migrate(appMigrations.path);
    await new DrizzleSaver(app.db).setup();
    await app.run(sql`insert into users (email) values ('ada@example.com'), ('grace@example.com')`);
    await startFlow(new DrizzleSaver(app.db), "order-7", "order #7");
    const shipped = readJournal(join(ROOT, "migrations", folder)).entries.map((entry) => entry.when);
    expect(await recorded(app, app.appMigrationsTable)).toEqual(
      readJournal(appMigrations.path).entries.map((e) => e.when),
    );
    expect(await recorded(app, OUR_TABLE)).toEqual(shipped);
    await app.close();

    // Release 2 on both sides: a new application migration and a new migration of ours.
    await drizzleKit(["generate", "--config", config, "--name", "notes"], {
      DROPIN_OUT: appMigrations.out,
      APP_RELEASE: "2",
    });
    expect(migrationFiles(appMigrations.path)).toHaveLength(2);
    const next = nextRelease(folder, ours.path);
    const appWhen = readJournal(appMigrations.path).entries.map((entry) => entry.when);

    // Three startups of release 2, in both orders: nothing runs twice, nothing is skipped.
    for (const order of ["app first", "saver first", "app first"]) {
      app = open(url);
      const saver = new NextReleaseSaver(app.db, ours.path);
      if (order === "app first") {
        await app.migrate(appMigrations.path);
        await saver.setup();
      } else {
        await saver.setup();
        await app.migrate(appMigrations.path);
      }
      expect(await recorded(app, app.appMigrationsTable)).toEqual(appWhen);
      expect(await recorded(app, OUR_TABLE)).toEqual(next.when);
      await app.close();
    }

    app = open(url);
    try {
      // Each table holds its own history only.
      const appRows = await recorded(app, app.appMigrationsTable);
      const ourRows = await recorded(app, OUR_TABLE);
      expect(appRows).toHaveLength(2);
      expect(ourRows).toHaveLength(shipped.length + 1);
      expect(appRows.filter((when) => ourRows.includes(when))).toEqual([]);

      // The DDL of both new migrations took effect.
      expect(await count(app, tableExists(dialect, "notes"))).toBe(1);
      await app.run(sql`insert into notes (user_id, body) values (1, 'call back')`);
      expect(await count(app, tableExists(dialect, "checkpoint_dropin_probe"))).toBe(1);
      expect(await count(app, indexExists(dialect, "checkpoints_dropin_probe_idx"))).toBe(1);

      // The conversation started under release 1 finishes under release 2.
      await resumeFlow(new NextReleaseSaver(app.db, ours.path), "order-7", "order #7", {
        approved: false,
        note: "",
      });
      expect(await app.rows(sql`select email from users order by id`)).toEqual([
        { email: "ada@example.com" },
        { email: "grace@example.com" },
      ]);
    } finally {
      await app.close();
    }
  });
});
