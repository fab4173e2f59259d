import { inspect } from "node:util";
import { PGlite } from "@electric-sql/pglite";
import { uuid6 } from "@langchain/langgraph-checkpoint";
import { drizzle } from "drizzle-orm/node-postgres";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { DrizzleSaver } from "../../src/index.js";
import { freshDatabaseUrl } from "../helpers/databases.js";
import { checkpointOf, openRaw } from "./helpers.js";

/**
 * A statement that fails must not put the values it carried into the error: they are
 * checkpoint state and metadata, which may hold secrets, and errors end up in logs.
 * drizzle's DrizzleQueryError prints every parameter in its message, and mysql2 keeps
 * the whole SQL text, values inlined, on its error. With LANGGRAPH_CHECKPOINT_DEBUG=1
 * the parameters stay in the message.
 */

const SECRET = "sk-live-9f8e7d6c5b4a-do-not-log";
const hex = (text: string) => Buffer.from(text, "utf8").toString("hex");

const SAVERS = [
  { name: "sqlite (better-sqlite3)", dialect: "sqlite" },
  { name: "postgres (postgres.js)", dialect: "postgres" },
  { name: "postgres (node-postgres)", dialect: "postgres", nodePostgres: true },
  // PGlite's own error, drizzle's cause, carries the values as its `params`.
  { name: "postgres (PGlite)", dialect: "postgres", pglite: true },
  { name: "mysql (mysql2)", dialect: "mysql" },
] as const;

describe.each(SAVERS)("errors of failed statements on $name", ({ dialect, ...options }) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    delete process.env.LANGGRAPH_CHECKPOINT_DEBUG;
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  /** A saver whose blob table has gone, so a put carrying the secret fails in the database. */
  async function brokenSaver(): Promise<DrizzleSaver> {
    if ("pglite" in options) {
      const client = new PGlite();
      cleanups.push(() => client.close());
      const saver = new DrizzleSaver(drizzlePglite(client));
      await saver.setup();
      await client.exec("alter table checkpoint_blobs rename to checkpoint_blobs_gone");
      return saver;
    }
    const url = await freshDatabaseUrl(dialect);
    let saver: DrizzleSaver;
    if ("nodePostgres" in options) {
      const pool = new pg.Pool({ connectionString: url, max: 2 });
      saver = new DrizzleSaver(drizzle(pool));
      cleanups.push(() => pool.end());
    } else {
      const own = await DrizzleSaver.fromUrl(url);
      saver = own;
      cleanups.push(() => own.close());
    }
    await saver.setup();
    const raw = await openRaw(dialect, url);
    await raw.query(
      dialect === "mysql"
        ? "rename table checkpoint_blobs to checkpoint_blobs_gone"
        : "alter table checkpoint_blobs rename to checkpoint_blobs_gone",
    );
    await raw.close();
    return saver;
  }

  async function failedPut(saver: DrizzleSaver): Promise<Error> {
    const error = await saver
      .put(
        { configurable: { thread_id: "t", checkpoint_ns: "" } },
        checkpointOf(uuid6(-1), { apiKey: SECRET }, { apiKey: "1" }),
        { source: "input", step: -1, parents: {}, token: SECRET } as never,
        { apiKey: "1" },
      )
      .then(
        () => undefined,
        (reason: unknown) => reason,
      );
    expect(error).toBeInstanceOf(Error);
    return error as Error;
  }

  it("keep the SQL and the database's message, never the values", async () => {
    const error = await failedPut(await brokenSaver());
    const everything = `${String(error)}\n${error.stack}\n${inspect(error, { depth: 10 })}`;
    expect(everything).not.toContain(SECRET);
    expect(everything.toLowerCase()).not.toContain(hex(SECRET));
    expect(everything).toMatch(/checkpoint_blobs/);
    expect(everything).toMatch(/does not exist|doesn't exist|no such table/);
  });

  it.runIf(dialect !== "sqlite" && !(dialect === "postgres" && !("nodePostgres" in options) && !("pglite" in options)))(
    "keep the values with LANGGRAPH_CHECKPOINT_DEBUG=1",
    async () => {
      const saver = await brokenSaver();
      process.env.LANGGRAPH_CHECKPOINT_DEBUG = "1";
      const error = await failedPut(saver);
      expect(error.message).toMatch(/params: /);
      expect(error.message).toContain(SECRET);
    },
  );
});
