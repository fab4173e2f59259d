// The options that say where applied migrations are recorded (`migrationsTable`,
// `migrationsSchema`) are checked when the saver or store is made, as `schema` is: a
// blank or non-string name made a table with an empty name (SQLite), or failed in setup()
// with a bare TypeError; `migrationsSchema` on MySQL or SQLite was silently ignored.
import { existsSync } from "node:fs";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { DrizzleSaver, DrizzleStore, InvalidInputError } from "../../src/index.js";
import { type DialectName, freshDatabaseUrl } from "../helpers/databases.js";

const KINDS = [
  { name: "DrizzleSaver", open: (url: string, options: object) => DrizzleSaver.fromUrl(url, options) },
  { name: "DrizzleStore", open: (url: string, options: object) => DrizzleStore.fromUrl(url, options) },
];

/** The error of opening (and, if that passed, setting up) with these options. */
async function refusal(open: (typeof KINDS)[number]["open"], url: string, options: object): Promise<unknown> {
  try {
    const opened = await open(url, options);
    try {
      await opened.setup();
    } finally {
      await opened.close();
    }
  } catch (error) {
    return error;
  }
  return undefined;
}

describe.each(KINDS)("$name's migration options", ({ open }) => {
  // A name of the wrong type is refused before the file is opened (fromUrl checks its options
  // first); migrationsSchema, refused for the database's family, after opening it.
  it.each([
    ["an empty migrationsTable", { migrationsTable: "" }, /migrationsTable must be a non-empty string/, "no file"],
    ["a blank migrationsTable", { migrationsTable: "  " }, /migrationsTable must be a non-empty string/, "no file"],
    ["a numeric migrationsTable", { migrationsTable: 5 }, /migrationsTable must be a non-empty string/, "no file"],
    [
      "migrationsSchema",
      { migrationsSchema: "langgraph" },
      /migrationsSchema option is for PostgreSQL only/,
      "no tables",
    ],
  ])("refuse %s on SQLite before creating anything", async (_, options, message, left) => {
    const url = await freshDatabaseUrl("sqlite");
    const error = await refusal(open, url, options);
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as Error).message).toMatch(message);
    expect(existsSync(url)).toBe(left !== "no file");
    if (left === "no file") return;
    const file = new Database(url, { readonly: true });
    try {
      expect(file.prepare("select name from sqlite_master where type = 'table'").all()).toEqual([]);
    } finally {
      file.close();
    }
  });

  it.each<[DialectName, object, RegExp]>([
    ["mysql", { migrationsSchema: "langgraph" }, /migrationsSchema option is for PostgreSQL only/],
    ["postgres", { migrationsSchema: "" }, /migrationsSchema must be a non-empty string/],
    ["postgres", { migrationsTable: "" }, /migrationsTable must be a non-empty string/],
  ])("refuse on %s: %o", async (dialect, options, message) => {
    const url = await freshDatabaseUrl(dialect);
    const error = await refusal(open, url, options);
    expect(error).toBeInstanceOf(InvalidInputError);
    expect((error as Error).message).toMatch(message);
    const saver = await DrizzleSaver.fromUrl(url);
    try {
      expect((await saver.migrationStatus()).applied).toEqual([]);
    } finally {
      await saver.close();
    }
  });
});
