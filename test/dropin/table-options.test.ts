// The table functions an application's schema calls (`checkpointTables`, `storeTables`
// from /pg, /mysql and /sqlite): a misspelt or mistyped option is an InvalidInputError
// naming it. It was dropped without a word, so `{ prefx: "lg_" }` gave the default names.
import { getTableName } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { InvalidInputError } from "../../src/index.js";
import * as mysql from "../../src/schema/mysql.js";
import * as pg from "../../src/schema/pg.js";
import * as sqlite from "../../src/schema/sqlite.js";

const FAMILIES = [
  { name: "pg", schema: pg },
  { name: "mysql", schema: mysql },
  { name: "sqlite", schema: sqlite },
] as const;

function refusal(call: () => unknown): string {
  try {
    call();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidInputError);
    return (error as Error).message;
  }
  throw new Error("no error thrown");
}

describe.each(FAMILIES)("the table functions of $name", ({ schema }) => {
  it.each(["checkpointTables", "storeTables"] as const)("%s refuses an unknown or mistyped option", (fn) => {
    const make = schema[fn] as (options?: unknown) => unknown;
    expect(refusal(() => make({ prefx: "lg_" }))).toBe(`${fn}: unknown option "prefx"`);
    expect(refusal(() => make({ prefix: 5 }))).toBe(`${fn}: prefix must be a string, got number`);
    expect(refusal(() => make(null))).toBe(`${fn}: options must be an object`);
  });

  it("names the tables with a prefix given correctly", () => {
    expect(getTableName(schema.checkpointTables({ prefix: "lg_" }).checkpoints)).toBe("lg_checkpoints");
    expect(getTableName(schema.storeTables({ prefix: "lg_" }).storeItems)).toBe("lg_store_items");
    expect(getTableName(schema.checkpointTables().checkpoints)).toBe("checkpoints");
  });
});

it("PostgreSQL's table functions take a schema, and refuse one that is not a string", () => {
  expect(pg.checkpointTables({ schema: "app" }).checkpoints).toBeDefined();
  expect(refusal(() => pg.checkpointTables({ schema: 1 } as never))).toBe(
    "checkpointTables: schema must be a string, got number",
  );
  expect(refusal(() => mysql.checkpointTables({ schema: "app" } as never))).toBe(
    'checkpointTables: unknown option "schema"',
  );
});
