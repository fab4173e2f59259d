import { randomBytes } from "node:crypto";
import { type Checkpoint, emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { drizzle } from "drizzle-orm/mysql2";
import mysql from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DrizzleSaver } from "../../src/index.js";
import { freshDatabaseUrl } from "../helpers/databases.js";

/**
 * MySQL/MariaDB servers running with NO_BACKSLASH_ESCAPES (a backslash is an ordinary
 * character in strings) and ANSI_QUOTES (double quotes delimit identifiers). mysql2
 * escapes values with backslashes on the client, so under these modes a thread id such
 * as `\' or 1=1 -- ` used to end its string early: getTuple returned another thread's
 * checkpoint and deleteThread deleted every thread.
 *
 * The modes are those of every new connection of a user made for this file, through
 * the server's init_connect (which the server skips for the administrators other test
 * files connect as), so the rest of the suite sharing the server is unaffected.
 */

const MODES = "NO_BACKSLASH_ESCAPES,ANSI_QUOTES";
const HOSTILE_IDS = ["\\' or 1=1 -- ", "\\' or '1'='1", "\\\\' or 1=1 #", "x\\", "\"'\\", "a\\'b"];

describe("MySQL statements under sql_mode NO_BACKSLASH_ESCAPES and ANSI_QUOTES", () => {
  let admin: mysql.Connection;
  let url: string;
  let previousInitConnect = "";
  const user = `lgcd_modes_${randomBytes(4).toString("hex")}`;

  beforeAll(async () => {
    url = await freshDatabaseUrl("mysql");
    const database = new URL(url).pathname.slice(1);
    admin = await mysql.createConnection(url);
    const [[row]] = (await admin.query("select @@global.init_connect as value")) as unknown as [[{ value: string }]];
    previousInitConnect = row.value ?? "";
    await admin.query(`create user '${user}'@'127.0.0.1' identified by 'modes'`);
    await admin.query(`grant all on \`${database}\`.* to '${user}'@'127.0.0.1'`);
    await admin.query(
      `set global init_connect = "set session sql_mode = if(substring_index(current_user(), '@', 1) = '${user}', '${MODES}', @@session.sql_mode)"`,
    );
  });

  afterAll(async () => {
    await admin?.query("set global init_connect = ?", [previousInitConnect]);
    await admin?.query(`drop user if exists '${user}'@'127.0.0.1'`);
    await admin?.end();
  });

  function userUrl(): string {
    const withUser = new URL(url);
    withUser.username = user;
    withUser.password = "modes";
    return withUser.toString();
  }

  function checkpointOf(): Checkpoint {
    return { ...emptyCheckpoint(), id: uuid6(-1) };
  }

  async function expectModeIndependent(saver: DrizzleSaver) {
    // The victim is written by a connection in the default modes (the tables too).
    const writer = await DrizzleSaver.fromUrl(url);
    const victim = { configurable: { thread_id: `victim-${randomBytes(4).toString("hex")}`, checkpoint_ns: "" } };
    try {
      await writer.setup();
      await writer.put(victim, checkpointOf(), { source: "input", step: -1, parents: {} }, {});
    } finally {
      await writer.close();
    }
    await saver.setup();
    for (const id of HOSTILE_IDS) {
      const hostile = { configurable: { thread_id: id, checkpoint_ns: id } };
      expect(await saver.getTuple(hostile), `getTuple ${JSON.stringify(id)}`).toBeUndefined();
      const listed = [];
      for await (const tuple of saver.list(hostile, { filter: { [id]: id } })) listed.push(tuple);
      expect(listed, `list ${JSON.stringify(id)}`).toEqual([]);
      await saver.deleteThread(id);
      expect(await saver.getTuple(victim), `after deleteThread ${JSON.stringify(id)}`).toBeDefined();
    }
    // The same values are ordinary data: stored and found exactly.
    for (const id of HOSTILE_IDS) {
      const config = { configurable: { thread_id: id, checkpoint_ns: id } };
      const checkpoint = checkpointOf();
      await saver.put(config, checkpoint, { source: "input", step: -1, parents: {}, [id]: id } as never, {});
      const tuple = await saver.getTuple(config);
      expect(tuple?.checkpoint.id).toBe(checkpoint.id);
      expect(tuple?.config.configurable?.thread_id).toBe(id);
      const found = [];
      for await (const t of saver.list({}, { filter: { [id]: id } })) found.push(t.config.configurable?.thread_id);
      expect(found).toEqual([id]);
      await saver.deleteThread(id);
      expect(await saver.getTuple(config)).toBeUndefined();
    }
    expect(await saver.getTuple(victim)).toBeDefined();
  }

  it("through an application's own mysql2 pool", async () => {
    const pool = mysql.createPool({ uri: userUrl(), connectionLimit: 3 });
    try {
      const [[row]] = (await pool.query("select @@session.sql_mode as mode")) as unknown as [[{ mode: string }]];
      expect(row.mode).toContain("NO_BACKSLASH_ESCAPES");
      expect(row.mode).toContain("ANSI_QUOTES");
      await expectModeIndependent(new DrizzleSaver(drizzle(pool)));
    } finally {
      await pool.end();
    }
  });

  it("through DrizzleSaver.fromUrl", async () => {
    const saver = await DrizzleSaver.fromUrl(userUrl());
    try {
      await expectModeIndependent(saver);
    } finally {
      await saver.close();
    }
  });
});
