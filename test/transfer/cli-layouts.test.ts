// Issue 31, finding 8: export and import take the layout options every other command
// takes (--table-prefix, --schema and their LANGGRAPH_CHECKPOINT_* variables), for the
// tables at --url; a PostgreSQL source given with --from names its schema with
// --from-schema. Before, export and import had no --table-prefix, and --schema meant
// only the official saver's schema (ours in a schema was refused).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  generateMySQLDrizzleJson,
  generateMySQLMigration,
  generateSQLiteDrizzleJson,
  generateSQLiteMigration,
} from "drizzle-kit/api";
import { describe, expect, it } from "vitest";
import { DrizzleSaver, type DrizzleSaverOptions } from "../../src/index.js";
import { checkpointTables as mysqlTables } from "../../src/schema/mysql.js";
import { checkpointTables as sqliteTables } from "../../src/schema/sqlite.js";
import { rawQuery } from "../cli/helpers.js";
import { freshDatabaseUrl } from "../helpers/databases.js";
import { readText, runCli, threadIds, threadsOfFile, writeSyntheticFile } from "./support.js";

const dir = mkdtempSync(join(tmpdir(), "lgcd-cli-layouts-"));

/** A database with the application's prefixed tables, made as drizzle-kit makes them. */
async function prefixedDatabase(dialect: "sqlite" | "mysql"): Promise<{ url: string; options: DrizzleSaverOptions }> {
  const url = await freshDatabaseUrl(dialect);
  const tables = dialect === "mysql" ? mysqlTables({ prefix: "lg_" }) : sqliteTables({ prefix: "lg_" });
  const ddl =
    dialect === "mysql"
      ? await generateMySQLMigration(await generateMySQLDrizzleJson({}), await generateMySQLDrizzleJson(tables))
      : await generateSQLiteMigration(await generateSQLiteDrizzleJson({}), await generateSQLiteDrizzleJson(tables));
  for (const statement of ddl) await rawQuery(dialect, url, statement);
  return { url, options: { tables } };
}

async function idsAt(url: string, options: DrizzleSaverOptions): Promise<string[]> {
  const saver = await DrizzleSaver.fromUrl(url, options);
  try {
    return await threadIds(saver);
  } finally {
    await saver.close();
  }
}

/** Imports the file with the CLI into the tables `layout` names, exports them again, and compares. */
async function roundTrip(name: string, url: string, layout: string[], env: Record<string, string> = {}) {
  const file = join(dir, `${name}.jsonl`);
  await writeSyntheticFile(file, { threads: 2, checkpoints: 3, prefix: name });
  const imported = await runCli(["import", "--url", url, ...layout, "--file", file, "--json"]);
  expect(imported.code, imported.stderr).toBe(0);
  expect(JSON.parse(imported.stdout)).toMatchObject({ imported: 2, failed: [] });
  const out = join(dir, `${name}-out.jsonl`);
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    const exported = await runCli([
      "export",
      "--url",
      url,
      ...(Object.keys(env).length > 0 ? [] : layout),
      "--out",
      out,
    ]);
    expect(exported.code, exported.stderr).toBe(0);
  } finally {
    process.env = saved;
  }
  expect(threadsOfFile(readText(out))).toEqual(threadsOfFile(readText(file)));
  return file;
}

describe("export and import with the layout options", { timeout: 180_000 }, () => {
  it("SQLite, tables with a prefix (the option, then the environment)", async () => {
    const { url, options } = await prefixedDatabase("sqlite");
    await roundTrip("lite", url, ["--table-prefix", "lg_"], { LANGGRAPH_CHECKPOINT_TABLE_PREFIX: "lg_" });
    expect(await idsAt(url, options)).toEqual(["lite-0", "lite-1"]);
  });

  it("MariaDB, tables with a prefix", async () => {
    const { url, options } = await prefixedDatabase("mysql");
    await roundTrip("maria", url, ["--table-prefix", "lg_"]);
    expect(await idsAt(url, options)).toEqual(["maria-0", "maria-1"]);
  });

  it("PostgreSQL, the shipped tables in a schema (the saver's schema option), and that schema as a source", async () => {
    const url = await freshDatabaseUrl("postgres");
    const saver = await DrizzleSaver.fromUrl(url, { schema: "agent" });
    await saver.setup();
    await saver.close();
    await roundTrip("pg", url, ["--schema", "agent"], { LANGGRAPH_CHECKPOINT_SCHEMA: "agent" });
    expect(await idsAt(url, { schema: "agent" })).toEqual(["pg-0", "pg-1"]);

    const target = await freshDatabaseUrl("sqlite");
    expect((await runCli(["migrate", "--url", target])).code).toBe(0);
    const copied = await runCli(["import", "--url", target, "--from", url, "--from-schema", "agent", "--json"]);
    expect(copied.code, copied.stderr).toBe(0);
    expect(JSON.parse(copied.stdout)).toMatchObject({ imported: 2, failed: [] });
  });
});
