// Drop-in, recipe 1: the application defines the saver's tables in its own schema
// module with checkpointTables({ prefix }), generates and applies them with its own
// drizzle-kit, and passes them to the saver. Items 1 and 4 of issue 6. Each fixture
// runs as an application of its own with the packed package installed (issue 13), so
// its schema's "langgraph-checkpoint-drizzle/<dialect>" import goes through the exports map.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { type SQL, sql, type Table } from "drizzle-orm";
import { type MySqlTable, getTableConfig as mysqlTableConfig } from "drizzle-orm/mysql-core";
import { type PgTable, getTableConfig as pgTableConfig } from "drizzle-orm/pg-core";
import { type SQLiteTable, getTableConfig as sqliteTableConfig } from "drizzle-orm/sqlite-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CheckpointTables, DrizzleSaver, type SupportedDatabase } from "../../src/index.js";
import { type DialectName, freshDatabaseUrl } from "../helpers/databases.js";
import { packedTarball, type ScratchApp, scratchApp } from "../package/tarball.js";
import {
  migrationFiles,
  mysqlPartitionStatements,
  PARTITIONS,
  partitionPostgresMigration,
  resumeFlow,
  drizzleKit as runDrizzleKit,
  startFlow,
} from "./support.js";

type Row = Record<string, unknown>;

/** What the tests need from a fixture application (its app.ts returns a superset). */
interface App {
  db: SupportedDatabase;
  tables: CheckpointTables;
  addUsers(emails: string[]): Promise<void>;
  listUsers(): Promise<unknown[]>;
  rows(query: SQL): Promise<Row[]>;
  close(): Promise<void>;
}

interface Fixture {
  name: string;
  dialect: DialectName;
  /** Postgres schema given to checkpointTables. */
  schema?: string;
  /** How the fixture partitions the saver's tables, if it does. */
  partitioning?: "edit-generated-migration" | "custom-migration";
}

const FIXTURES: Fixture[] = [
  { name: "pg", dialect: "postgres", partitioning: "edit-generated-migration" },
  { name: "pg-agent", dialect: "postgres", schema: "agent" },
  { name: "mysql", dialect: "mysql", partitioning: "custom-migration" },
  { name: "sqlite", dialect: "sqlite" },
];

/** The fixture's files (app.ts, schema.ts, drizzle.config.ts) in a scratch application. */
async function installFixture(name: string): Promise<ScratchApp> {
  const folder = join(import.meta.dirname, "fixtures", name);
  const files = Object.fromEntries(readdirSync(folder).map((file) => [file, readFileSync(join(folder, file), "utf8")]));
  return scratchApp("module", files, `dropin-${name}`);
}

const TABLES = ["lg_checkpoints", "lg_checkpoint_blobs", "lg_checkpoint_writes"];
const SAVER_TABLE_NAMES = [
  "checkpoints",
  "checkpoint_blobs",
  "checkpoint_writes",
  "checkpoint_threads",
  "langgraph_checkpoint_migrations",
];

/** Every table of the database, schema-qualified on PostgreSQL. */
function allTablesQuery(dialect: DialectName): SQL {
  if (dialect === "postgres")
    return sql`select table_schema || '.' || table_name as name from information_schema.tables
               where table_schema not in ('pg_catalog', 'information_schema') order by 1`;
  if (dialect === "mysql")
    return sql`select table_name as name from information_schema.tables where table_schema = database() order by 1`;
  return sql`select name from sqlite_master where type = 'table' order by 1`;
}

/** Index names on the saver's tables, as the database reports them. */
function indexesQuery(dialect: DialectName, schema = "public"): SQL {
  if (dialect === "postgres")
    return sql`select indexname as name, indexdef as def from pg_indexes
               where schemaname = ${schema} and tablename in ('lg_checkpoints', 'lg_checkpoint_blobs', 'lg_checkpoint_writes', 'lg_checkpoint_threads')`;
  if (dialect === "mysql")
    return sql`select distinct index_name as name from information_schema.statistics
               where table_schema = database() and table_name in ('lg_checkpoints', 'lg_checkpoint_blobs', 'lg_checkpoint_writes', 'lg_checkpoint_threads')`;
  return sql`select name, sql as def from sqlite_master
             where type = 'index' and tbl_name in ('lg_checkpoints', 'lg_checkpoint_blobs', 'lg_checkpoint_writes', 'lg_checkpoint_threads')`;
}

/** Names of the indexes (not primary keys) the table factory declares. */
function declaredIndexes(dialect: DialectName, tables: CheckpointTables): string[] {
  const all = Object.values(tables) as Table[];
  const names = all.flatMap((table) => {
    if (dialect === "postgres") return pgTableConfig(table as PgTable).indexes.map((i) => i.config.name);
    if (dialect === "mysql") return mysqlTableConfig(table as MySqlTable).indexes.map((i) => i.config.name);
    return sqliteTableConfig(table as SQLiteTable).indexes.map((i) => i.config.name);
  });
  return names.filter((name): name is string => typeof name === "string").sort();
}

function names(rows: Row[]): string[] {
  return rows.map((row) => String(row.name)).sort();
}

/** The drizzle-kit migrations table of the application (drizzle's default). */
function appMigrationsCount(dialect: DialectName): SQL {
  return dialect === "postgres"
    ? sql`select count(*) as n from "drizzle"."__drizzle_migrations"`
    : sql`select count(*) as n from __drizzle_migrations`;
}

// Packing (a build) takes a while on a busy machine: once, before any test's own timeout runs.
beforeAll(() => packedTarball(), 300_000);

describe.each(FIXTURES)("fixture application $name", (fixture) => {
  const { dialect } = fixture;
  const config = "drizzle.config.ts";
  let application: ScratchApp | undefined;
  let url = "";
  let ddl = "";
  let appMigrations = 0;
  /** The application's openApp, imported from its scratch folder. */
  let opener: ((databaseUrl: string) => App) | undefined;
  const open = (databaseUrl: string): App => {
    if (!opener) throw new Error("the fixture application is installed in beforeAll");
    return opener(databaseUrl);
  };

  afterAll(() => application?.remove());

  beforeAll(async () => {
    url = await freshDatabaseUrl(dialect);
    application = await installFixture(fixture.name);
    const cwd = application.dir;
    const out = join(cwd, "drizzle");
    const env = { DROPIN_OUT: "drizzle", DATABASE_URL: url };
    const drizzleKit = (args: string[], vars: Record<string, string>) => runDrizzleKit(args, vars, cwd);
    await drizzleKit(["generate", "--config", config, "--name", "init"], env);
    const [init] = migrationFiles(out);
    ddl = readFileSync(init, "utf8");

    if (fixture.partitioning === "edit-generated-migration") {
      writeFileSync(init, partitionPostgresMigration(ddl, TABLES, fixture.schema));
    } else if (fixture.partitioning === "custom-migration") {
      await drizzleKit(["generate", "--config", config, "--custom", "--name", "partition_checkpoints"], env);
      const custom = migrationFiles(out)[1];
      writeFileSync(custom, `${readFileSync(custom, "utf8")}\n${mysqlPartitionStatements(TABLES)}\n`);
    }
    if (fixture.partitioning) {
      // The hand-written partitioning does not disturb drizzle-kit: its snapshot still matches the schema.
      expect(await drizzleKit(["generate", "--config", config], env)).toMatch(/No schema changes/);
    }

    await drizzleKit(["migrate", "--config", config], env);
    appMigrations = migrationFiles(out).length;
    const module = (await import(pathToFileURL(join(cwd, "app.ts")).href)) as { openApp(url: string): App };
    opener = module.openApp;
  });

  it("generates the saver's indexes, prefixed, from the table factory", async () => {
    const on = fixture.schema ? `"${fixture.schema}"."lg_checkpoints"` : `"lg_checkpoints"`;
    if (dialect === "postgres") {
      expect(ddl).toContain(
        `CREATE INDEX "lg_checkpoints_metadata_idx" ON ${on} USING gin ("metadata" jsonb_path_ops) WITH (fastupdate=false);`,
      );
      if (fixture.schema) {
        expect(ddl).toContain(`CREATE SCHEMA "${fixture.schema}";`);
        expect(ddl).toContain(`CREATE TABLE "${fixture.schema}"."lg_checkpoints" (`);
        expect(ddl).toContain(`CREATE TABLE "users" (`);
      }
    } else {
      // MySQL and SQLite index the metadata through generated columns.
      // On MySQL with its own character set, so the database's default never applies.
      expect(ddl).toMatch(
        /`meta_source` (varchar\(64\) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin|text) GENERATED ALWAYS AS \(.+\) VIRTUAL/,
      );
      expect(ddl).toMatch(/`meta_step` (double|real) GENERATED ALWAYS AS \(.+\) VIRTUAL/);
      // SQLite's is partial: a "loop" step, most of a graph's checkpoints, adds no entry.
      const sourceCondition = dialect === "sqlite" ? " WHERE meta_source <> 'loop'" : "";
      expect(ddl).toContain(
        `CREATE INDEX \`lg_checkpoints_meta_source_idx\` ON \`lg_checkpoints\` (\`meta_source\`,\`checkpoint_id\`)${sourceCondition};`,
      );
      expect(ddl).toContain(
        "CREATE INDEX `lg_checkpoints_meta_step_idx` ON `lg_checkpoints` (`meta_step`,`checkpoint_id`);",
      );
    }
    const app = open(url);
    const declared = declaredIndexes(dialect, app.tables);
    await app.close();
    expect(declared.length).toBeGreaterThan(0);
    for (const index of declared) {
      expect(index.startsWith("lg_")).toBe(true);
      expect(ddl).toMatch(new RegExp(`CREATE INDEX ["\`]${index}["\`] ON `));
    }
    // Primary keys are named with the prefix too, so they never clash with the application's
    // (SQLite keeps no constraint names).
    if (dialect !== "sqlite") {
      for (const table of TABLES) expect(ddl).toMatch(new RegExp(`CONSTRAINT ["\`]${table}_pk["\`] PRIMARY KEY`));
    }
    // drizzle-kit writes no partitioning: that part is the user's (docs/already-on-drizzle.md).
    expect(ddl).not.toMatch(/PARTITION/i);
  });

  it("creates the tables, indexes and partitions in the database", async () => {
    const app = open(url);
    try {
      const tables = names(await app.rows(allTablesQuery(dialect)));
      const where = dialect === "postgres" ? `${fixture.schema ?? "public"}.` : "";
      for (const table of [...TABLES, "lg_checkpoint_threads"]) expect(tables).toContain(`${where}${table}`);
      expect(tables).toContain(dialect === "postgres" ? "public.users" : "users");

      const indexes = names(await app.rows(indexesQuery(dialect, fixture.schema)));
      for (const index of declaredIndexes(dialect, app.tables)) expect(indexes).toContain(index);
      if (dialect === "postgres") {
        const [gin] = await app.rows(
          sql`select indexdef from pg_indexes where indexname = 'lg_checkpoints_metadata_idx'`,
        );
        expect(String(gin.indexdef)).toMatch(/USING gin \(metadata jsonb_path_ops\) WITH \(fastupdate='?false'?\)/);
      }

      if (fixture.partitioning === "edit-generated-migration") {
        const partitioned = await app.rows(sql`
          select c.relname as name, pt.partstrat as strategy, count(i.inhrelid)::int as partitions
          from pg_partitioned_table pt
          join pg_class c on c.oid = pt.partrelid
          left join pg_inherits i on i.inhparent = c.oid
          group by c.relname, pt.partstrat`);
        partitioned.sort((a, b) => (String(a.name) < String(b.name) ? -1 : 1));
        expect(partitioned).toEqual(
          [...TABLES].sort().map((name) => ({ name, strategy: "h", partitions: PARTITIONS })),
        );
        // Indexes declared on a partitioned table exist on every partition.
        const [{ n }] = await app.rows(
          sql`select count(*)::int as n from pg_indexes where tablename like 'lg\_checkpoints\_p%' and indexdef like '%gin (metadata jsonb_path_ops)%'`,
        );
        expect(n).toBe(PARTITIONS);
      } else if (fixture.partitioning === "custom-migration") {
        const partitioned = await app.rows(sql`
          select table_name as name, max(partition_method) as method, count(*) as partitions
          from information_schema.partitions
          where table_schema = database() and partition_name is not null
          group by table_name`);
        const byName = partitioned.map((row) => ({
          name: row.name,
          method: row.method,
          partitions: Number(row.partitions),
        }));
        byName.sort((a, b) => (String(a.name) < String(b.name) ? -1 : 1));
        expect(byName).toEqual([...TABLES].sort().map((name) => ({ name, method: "KEY", partitions: PARTITIONS })));
      }
    } finally {
      await app.close();
    }
  });

  it("runs and resumes a LangGraph graph on the application's tables, leaving its rows alone", async () => {
    const emails = ["ada@example.com", "grace@example.com", "edsger@example.com"];
    const first = open(url);
    await first.addUsers(emails);
    const usersBefore = await first.listUsers();
    expect(usersBefore).toHaveLength(3);
    const tablesBefore = names(await first.rows(allTablesQuery(dialect)));

    const saver = new DrizzleSaver(first.db, { tables: first.tables });
    // setup() with the application's tables is harmless: it creates and records nothing.
    await saver.setup();
    await startFlow(saver, "refund-42", "refund #42");
    await startFlow(saver, "refund-43", "refund #43");
    await saver.setup();
    await first.close();

    // The answer comes later, on a new connection (a new process of the application).
    const second = open(url);
    try {
      const resumed = new DrizzleSaver(second.db, { tables: second.tables });
      await resumed.setup();
      await resumeFlow(resumed, "refund-42", "refund #42", { approved: true, note: "receipt checked" });

      // Everything went to the application's lg_ tables, including the subgraph's namespace.
      const { checkpoints, checkpointBlobs, checkpointWrites } = second.tables;
      const count = async (query: SQL) => Number((await second.rows(query))[0].n);
      expect(
        await count(sql`select count(*) as n from ${checkpoints} where ${checkpoints.checkpointNs} <> ''`),
      ).toBeGreaterThan(0);
      expect(await count(sql`select count(*) as n from ${checkpointBlobs}`)).toBeGreaterThan(0);
      expect(await count(sql`select count(*) as n from ${checkpointWrites}`)).toBeGreaterThan(0);

      // Metadata filters run on the factory's tables (and their indexes).
      const inputs = [];
      for await (const tuple of resumed.list({ configurable: { checkpoint_ns: "" } }, { filter: { source: "input" } }))
        inputs.push(tuple);
      expect(inputs.map((t) => t.config.configurable?.thread_id).sort()).toEqual(["refund-42", "refund-43"]);
      const step2 = [];
      for await (const tuple of resumed.list(
        { configurable: { thread_id: "refund-42", checkpoint_ns: "" } },
        { filter: { step: 2 } },
      ))
        step2.push(tuple);
      expect(step2).toHaveLength(1);

      // A thread deleted from the saver leaves the other thread and the application's rows.
      await resumed.deleteThread("refund-43");
      expect(await resumed.getTuple({ configurable: { thread_id: "refund-43" } })).toBeUndefined();
      expect(await resumed.getTuple({ configurable: { thread_id: "refund-42" } })).toBeDefined();

      expect(await second.listUsers()).toEqual(usersBefore);
      // No table appeared (no default checkpoint tables, no migrations table of ours), and the
      // application's migration history is as drizzle-kit left it.
      const tablesAfter = names(await second.rows(allTablesQuery(dialect)));
      expect(tablesAfter).toEqual(tablesBefore);
      for (const table of SAVER_TABLE_NAMES)
        expect(tablesAfter.filter((name) => name === table || name.endsWith(`.${table}`))).toEqual([]);
      expect(Number((await second.rows(appMigrationsCount(dialect)))[0].n)).toBe(appMigrations);
    } finally {
      await second.close();
    }
  });
});
