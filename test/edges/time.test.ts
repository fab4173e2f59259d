import Database from "better-sqlite3";
import { drizzle as drizzleSqlite } from "drizzle-orm/better-sqlite3";
import { drizzle as drizzleMysql } from "drizzle-orm/mysql2";
import { drizzle as drizzlePg } from "drizzle-orm/postgres-js";
import mysql from "mysql2/promise";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DrizzleSaver } from "../../src/index.js";
import { DIALECTS, type DialectName, freshDatabaseUrl } from "../helpers/databases.js";
import { newThreadId, openRaw, type RawDatabase, setCreatedAt, threadConfig } from "../lifecycle/support.js";
import { checkpointOf, collect, putValues } from "./support.js";

/**
 * Times are stored and read back exactly, past 2038, whatever the time zone of the
 * Node process, the session's time zone or (PostgreSQL) its DateStyle.
 */

// The process runs 14 hours ahead of UTC, the database sessions 10 hours behind it.
const originalTz = process.env.TZ;
process.env.TZ = "Pacific/Kiritimati";

/** A saver whose connection has a session time zone (and on PostgreSQL a date style) unlike the process's. */
function unusualSession(dialect: DialectName, url: string): { saver: DrizzleSaver; close: () => Promise<void> } {
  if (dialect === "postgres") {
    const client = postgres(url, {
      onnotice: () => {},
      connection: { DateStyle: "German, DMY", TimeZone: "Pacific/Honolulu" },
    });
    return { saver: new DrizzleSaver(drizzlePg(client)), close: () => client.end() };
  }
  if (dialect === "mysql") {
    const pool = mysql.createPool({ uri: url, charset: "utf8mb4", supportBigNumbers: true });
    pool.on("connection", (connection) => {
      connection.query("set time_zone = '-10:00'");
    });
    return { saver: new DrizzleSaver(drizzleMysql(pool)), close: () => pool.end() };
  }
  const sqlite = new Database(url);
  return {
    saver: new DrizzleSaver(drizzleSqlite(sqlite)),
    close: async () => {
      sqlite.close();
    },
  };
}

/** SQL for `created_at` at a time given in milliseconds (one `?`). */
const createdAtFromMillis = (dialect: DialectName) =>
  ({ postgres: "to_timestamp(cast(? as bigint) / 1000.0)", mysql: "cast(? as signed)", sqlite: "cast(? as integer)" })[
    dialect
  ];

describe.each(DIALECTS)("time on %s", (dialect) => {
  let session: ReturnType<typeof unusualSession>;
  let raw: RawDatabase;
  beforeAll(async () => {
    const url = await freshDatabaseUrl(dialect);
    const setup = await DrizzleSaver.fromUrl(url);
    await setup.setup();
    await setup.close();
    session = unusualSession(dialect, url);
    raw = await openRaw(dialect, url);
  });
  afterAll(async () => {
    await raw?.close();
    await session?.close();
    process.env.TZ = originalTz;
  });

  it("reads the time a checkpoint was written as that instant", async () => {
    const threadId = newThreadId("now");
    const before = Date.now();
    await putValues(session.saver, threadConfig(threadId), checkpointOf("1"));
    const after = Date.now();
    const [summary] = (await collect(session.saver.listThreads())).filter((s) => s.threadId === threadId);
    const at = summary.latestCreatedAt.getTime();
    // Server and test share one clock; a second either way for rounding and transit.
    expect(at).toBeGreaterThanOrEqual(before - 1_000);
    expect(at).toBeLessThanOrEqual(after + 1_000);
  });

  it("stores, reads and expires times after 2038", async () => {
    const threadId = newThreadId("2040");
    await putValues(session.saver, threadConfig(threadId), checkpointOf("1"));
    const in2040 = Date.UTC(2040, 0, 2, 3, 4, 5, 678);
    await setCreatedAt(raw, [threadId], createdAtFromMillis(dialect), { params: [in2040] });
    const [summary] = (await collect(session.saver.listThreads())).filter((s) => s.threadId === threadId);
    expect(summary.latestCreatedAt.toISOString()).toBe("2040-01-02T03:04:05.678Z");

    const idle = newThreadId("idle");
    await putValues(session.saver, threadConfig(idle), checkpointOf("1"));
    // Every thread written now is idle since 2041; the 2040 one is older than 2041 too.
    const threads = (await collect(session.saver.listThreads())).length;
    expect(await session.saver.expireThreads({ idleSince: new Date(Date.UTC(2041, 0, 1)) })).toBe(threads);
    expect(await collect(session.saver.listThreads())).toEqual([]);
    expect(await session.saver.getTuple(threadConfig(idle))).toBeUndefined();
    expect(await session.saver.getTuple(threadConfig(threadId))).toBeUndefined();
  });
});
