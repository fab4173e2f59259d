// Issue 13: the CLI sees every layout the saver supports. Recipe A tables (a prefix,
// a PostgreSQL schema) made as an application makes them (drizzle-kit from
// checkpointTables), the shipped migrations recorded in another schema, and
// `status --check` as a CI gate.
import {
  generateDrizzleJson,
  generateMigration,
  generateMySQLDrizzleJson,
  generateMySQLMigration,
  generateSQLiteDrizzleJson,
  generateSQLiteMigration,
} from "drizzle-kit/api";
import { pgSchema } from "drizzle-orm/pg-core";
import { beforeAll, describe, expect, it } from "vitest";
import { DrizzleSaver } from "../../src/index.js";
import { checkpointTables as mysqlTables } from "../../src/schema/mysql.js";
import { checkpointTables as pgTables } from "../../src/schema/pg.js";
import { checkpointTables as sqliteTables } from "../../src/schema/sqlite.js";
import { type DialectName, freshDatabaseUrl } from "../helpers/databases.js";
import { cli, ensureBuilt, expectOneLineError, journalTags, jsonLines, rawQuery } from "./helpers.js";
import { seedMetadataThread } from "./seed.js";

/** The statements drizzle-kit generates for an application schema module holding `schema`. */
async function applicationDdl(dialect: DialectName, schema: Record<string, unknown>): Promise<string[]> {
  if (dialect === "postgres") return generateMigration(generateDrizzleJson({}), generateDrizzleJson(schema));
  if (dialect === "mysql") {
    return generateMySQLMigration(await generateMySQLDrizzleJson({}), await generateMySQLDrizzleJson(schema));
  }
  return generateSQLiteMigration(await generateSQLiteDrizzleJson({}), await generateSQLiteDrizzleJson(schema));
}

async function createApplicationTables(dialect: DialectName, url: string, schema: Record<string, unknown>) {
  for (const statement of await applicationDdl(dialect, schema)) await rawQuery(dialect, url, statement);
}

const threadsOf = (stdout: string) => jsonLines(stdout).map((t) => [t.threadId, t.checkpoints]);

describe("CLI layouts", { timeout: 300_000 }, () => {
  beforeAll(async () => {
    await ensureBuilt();
  }, 15 * 60_000);

  it("SQLite, tables with a prefix: every command, from an option or the environment", async () => {
    const url = await freshDatabaseUrl("sqlite");
    await rawQuery("sqlite", url, "create table users (id integer primary key)");
    expectOneLineError(
      await cli(["threads", "--url", url, "--table-prefix", "lg_"]),
      1,
      /the tables lg_checkpoints, lg_checkpoint_blobs, lg_checkpoint_writes do not exist/,
    );
    const missing = await cli(["status", "--url", url, "--table-prefix", "lg_", "--check"]);
    expect(missing.code).toBe(1);
    expect(missing.stdout).toContain("the tables do not exist yet");
    expect(missing.stderr).toMatch(/^error: the tables lg_checkpoints, .* do not exist/);
    expectOneLineError(
      await cli(["migrate", "--url", url, "--table-prefix", "lg_"]),
      2,
      /belong to the application, which creates and migrates them/,
    );
    expectOneLineError(await cli(["threads", "--url", url, "--schema", "agent"]), 2, /--schema is for PostgreSQL only/);

    const tables = sqliteTables({ prefix: "lg_" });
    await createApplicationTables("sqlite", url, tables);
    await seedMetadataThread(url, "meta", 3, { tables });
    const env = { LANGGRAPH_CHECKPOINT_TABLE_PREFIX: "lg_" };

    const status = await cli(["status", "--url", url, "--check", "--json"], { env });
    expect(status.code, status.stderr).toBe(0);
    const [doc] = jsonLines<{ tables: { table: string; rows: number }[] }>(status.stdout);
    expect(doc.tables.map((t) => [t.table, t.rows])).toEqual([
      ["lg_checkpoints", 3],
      ["lg_checkpoint_blobs", 6],
      ["lg_checkpoint_writes", 0],
    ]);
    const listed = await cli(["threads", "--url", url, "--json"], { env });
    expect(threadsOf(listed.stdout)).toEqual([["meta", 3]]);
    const history = await cli(["history", "--url", url, "--thread", "meta", "--json", "--table-prefix", "lg_"]);
    expect(jsonLines(history.stdout).map((line) => line.checkpointId)).toEqual(["cp-0002", "cp-0001", "cp-0000"]);
    const pruned = await cli(["prune", "--url", url, "meta", "--yes", "--table-prefix", "lg_"]);
    expect(pruned.code, pruned.stderr).toBe(0);
    const show = await cli(["show", "--url", url, "--thread", "meta", "--json"], { env });
    expect(jsonLines(show.stdout)[0].checkpointId).toBe("cp-0002");
    expect(show.stdout).toContain('"parentCheckpointId":null');
    // Without the prefix the CLI looks for the default tables, which this database does not have.
    expectOneLineError(await cli(["threads", "--url", url]), 1, /no checkpoint tables yet/);
  });

  it("PostgreSQL, tables in a schema of their own beside the default ones, and status --check", async () => {
    const url = await freshDatabaseUrl("postgres");
    const pending = await cli(["status", "--url", url, "--check"]);
    expect(pending.code).toBe(1);
    expect(pending.stdout).toContain(`0 applied, ${journalTags("postgres").length} pending`);
    expect(pending.stderr).toBe(
      `error: ${journalTags("postgres").length} pending migrations: run the migrate command\n`,
    );
    expect((await cli(["migrate", "--url", url])).code).toBe(0);
    const upToDate = await cli(["status", "--url", url, "--check"]);
    expect(upToDate.code, upToDate.stderr).toBe(0);

    const tables = pgTables({ prefix: "lg_", schema: "agent" });
    await createApplicationTables("postgres", url, { ...tables, agent: pgSchema("agent") });
    await seedMetadataThread(url, "in-agent", 2, { tables });
    await seedMetadataThread(url, "in-public", 1);

    const recipeA = ["--table-prefix", "lg_", "--schema", "agent"];
    const agent = await cli(["threads", "--url", url, "--json", ...recipeA]);
    expect(threadsOf(agent.stdout)).toEqual([["in-agent", 2]]);
    const fromEnv = await cli(["threads", "--url", url, "--json"], {
      env: { LANGGRAPH_CHECKPOINT_SCHEMA: "agent", LANGGRAPH_CHECKPOINT_TABLE_PREFIX: "lg_" },
    });
    expect(threadsOf(fromEnv.stdout)).toEqual([["in-agent", 2]]);
    const defaults = await cli(["threads", "--url", url, "--json"]);
    expect(threadsOf(defaults.stdout)).toEqual([["in-public", 1]]);

    const status = await cli(["status", "--url", url, ...recipeA, "--check"]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(
      "tables      agent.lg_checkpoints, agent.lg_checkpoint_blobs, agent.lg_checkpoint_writes",
    );
    expect(status.stdout).toMatch(/^\s+lg_checkpoints\s+2\s/m);
    const show = await cli(["show", "--url", url, "--thread", "in-agent", "--json", ...recipeA]);
    expect(jsonLines(show.stdout)[0].checkpointId).toBe("cp-0001");
    expectOneLineError(await cli(["migrate", "--url", url, ...recipeA]), 2, /belong to the application/);

    // A schema alone is the saver's `schema` option: the shipped migrations, applied there.
    const shipped = await cli(["migrate", "--url", url, "--schema", "shipped"]);
    expect(shipped.code, shipped.stderr).toBe(0);
    expect(shipped.stdout).toContain(`applied ${journalTags("postgres")[0]}`);
    expect((await cli(["status", "--url", url, "--schema", "shipped", "--check"])).code).toBe(0);
    const empty = await cli(["threads", "--url", url, "--schema", "shipped"]);
    expect(empty.stdout).toBe("no threads\n");
  });

  it("PostgreSQL, the shipped migrations recorded in another schema (setup({ migrationsSchema }))", async () => {
    const url = await freshDatabaseUrl("postgres");
    const saver = await DrizzleSaver.fromUrl(url, { migrationsSchema: "langgraph" });
    await saver.setup();
    await saver.close();
    await seedMetadataThread(url, "t", 1);

    const option = ["--migrations-schema", "langgraph"];
    const listed = await cli(["threads", "--url", url, "--json", ...option]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(threadsOf(listed.stdout)).toEqual([["t", 1]]);
    const migrated = await cli(["migrate", "--url", url, ...option]);
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(migrated.stdout).not.toContain("applied ");
    const env = { LANGGRAPH_CHECKPOINT_MIGRATIONS_SCHEMA: "langgraph" };
    expect((await cli(["status", "--url", url, "--check"], { env })).code).toBe(0);
    // Without it, the CLI reads the default migrations table, where nothing is recorded.
    expect((await cli(["status", "--url", url, "--check"])).code).toBe(1);
    expectOneLineError(
      await cli(["threads", "--url", url, "--table-prefix", "lg_", ...option]),
      2,
      /--migrations-table and --migrations-schema name the table of the shipped migrations/,
    );
  });

  it("MariaDB, tables with a prefix", async () => {
    const url = await freshDatabaseUrl("mysql");
    const tables = mysqlTables({ prefix: "lg_" });
    await createApplicationTables("mysql", url, tables);
    await seedMetadataThread(url, "meta", 2, { tables });
    const listed = await cli(["threads", "--url", url, "--json", "--table-prefix", "lg_"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(threadsOf(listed.stdout)).toEqual([["meta", 2]]);
    const status = await cli(["status", "--url", url, "--table-prefix", "lg_", "--check", "--json"]);
    expect(status.code, status.stderr).toBe(0);
    expect(jsonLines<{ tables: { rows: number }[] }>(status.stdout)[0].tables[0].rows).toBe(2);
  });

  it("MariaDB by a mariadb:// URL, tables with a prefix: the same MySQL tables as for mysql://", async () => {
    const mysqlUrl = await freshDatabaseUrl("mysql");
    const url = mysqlUrl.replace(/^mysql:/, "mariadb:");
    const tables = mysqlTables({ prefix: "lg_" });
    await createApplicationTables("mysql", mysqlUrl, tables);
    await seedMetadataThread(url, "meta", 2, { tables });
    const prefix = ["--table-prefix", "lg_"];
    const show = await cli(["show", "--url", url, "--thread", "meta", "--json", ...prefix]);
    expect(show.code, show.stderr).toBe(0);
    expect(jsonLines(show.stdout)[0].checkpointId).toBe("cp-0001");
    const status = await cli(["status", "--url", url, "--check", "--json", ...prefix]);
    expect(status.code, status.stderr).toBe(0);
    expect(jsonLines<{ tables: { rows: number }[] }>(status.stdout)[0].tables[0].rows).toBe(2);
    const listed = await cli(["threads", "--url", url, "--json"], {
      env: { LANGGRAPH_CHECKPOINT_TABLE_PREFIX: "lg_" },
    });
    expect(threadsOf(listed.stdout)).toEqual([["meta", 2]]);
    // A PostgreSQL option is refused as it is for mysql://.
    expectOneLineError(await cli(["threads", "--url", url, "--schema", "agent"]), 2, /--schema is for PostgreSQL only/);
  });
});
