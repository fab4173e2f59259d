/**
 * MariaDB's table cache after a kill: a session killed while it opens `checkpoints` stops
 * parsing the table's trigger definitions part way, and the table instance it leaves in
 * the cache refuses every later INSERT, UPDATE and DELETE on the table ("Trigger ... has an
 * error in its body"), whichever session takes it, until the table is flushed. Seen in the
 * connection-drop test (faults.test.ts): every put after such a kill failed.
 *
 * The window is a trigger parse, a few microseconds for the saver's own triggers; the test
 * adds triggers that take milliseconds to parse (they change nothing), so a kill lands in
 * it within a few tries.
 *
 * Which session meets the broken instance is not certain. MariaDB keeps a table's idle
 * instances in one of several cache partitions, the one of the session that created it
 * (connection id modulo the partitions in use, which grow from 1 when sessions contend, as
 * under the full suite's load), and a session takes instances only from its own; and an
 * instance released into a partition over its size is closed at once. So each test runs its
 * saver on one connection, probes through that very connection, and tries again (a new
 * thread) until the saver's own put met the broken instance.
 */
import { type CheckpointMetadata, uuid6 } from "@langchain/langgraph-checkpoint";
import { drizzle } from "drizzle-orm/mysql2";
import mysql from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CheckpointSaverError, DrizzleSaver } from "../../src/index.js";
import { freshDatabaseUrl } from "../helpers/databases.js";

const SLOW_TRIGGERS = 20;

/** A BEFORE INSERT trigger that sets checkpoint_type to itself through a long CASE: slow to parse, no effect. */
function slowTrigger(n: number): string {
  const cases = Array.from({ length: 400 }, (_, k) => `when 'k${k}' then 'k${k}'`).join(" ");
  return `create trigger test_slow_parse_${n} before insert on checkpoints for each row
    set new.checkpoint_type = case new.checkpoint_type ${cases} else new.checkpoint_type end`;
}

/** Whether an insert into `checkpoints` is refused for a broken trigger (rolled back: the probe changes no row). */
async function refusesWrites(connection: mysql.Connection): Promise<boolean> {
  await connection.query("start transaction");
  try {
    await connection.query(
      "insert into checkpoints (thread_id, checkpoint_ns, ns_hash, checkpoint_id, checkpoint_type, checkpoint, channel_versions, metadata, created_at) values ('probe', '', unhex(sha2('', 256)), 'probe', 'k1', '', '{}', '{}', 0)",
    );
    return false;
  } catch (error) {
    if (/has an error in its body/.test(String((error as Error).message))) return true;
    throw error;
  } finally {
    await connection.query("rollback");
  }
}

/**
 * Kills sessions while they open `checkpoints` until the table refuses writes to `probe`
 * (the connection the saver under test runs on); returns the tries.
 */
async function poisonTableCache(url: string, admin: mysql.Connection, probe: mysql.Connection): Promise<number> {
  for (let tries = 1; tries <= 500; tries++) {
    await admin.query("flush tables checkpoints");
    const victim = await mysql.createConnection(url);
    const [[{ id }]] = (await victim.query("select connection_id() as id")) as unknown as [[{ id: number }]];
    const opening = victim.query("select count(*) from checkpoints").catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 6));
    await admin.query(`kill connection ${id}`).catch(() => undefined); // it may have finished already
    await opening;
    victim.destroy();
    if (await refusesWrites(probe)) return tries;
  }
  throw new Error("500 kills while sessions opened checkpoints left no broken table instance");
}

const config = (threadId: string) => ({ configurable: { thread_id: threadId, checkpoint_ns: "" } });
const checkpoint = () => ({
  v: 4,
  id: uuid6(0),
  ts: new Date().toISOString(),
  channel_values: { a: "A" },
  channel_versions: { a: "100000001.00000000000001" },
  versions_seen: {},
});
const metadata = { source: "input", step: -1, parents: {} } as CheckpointMetadata;
const put = (saver: DrizzleSaver, threadId: string) =>
  saver.put(config(threadId), checkpoint(), metadata, { a: "100000001.00000000000001" });

/** Attempts before a test gives up on the saver's put ever meeting the broken instance. */
const ATTEMPTS = 20;

describe("mysql: a table instance whose triggers failed to load", () => {
  let url: string;
  let admin: mysql.Connection;

  beforeAll(async () => {
    url = await freshDatabaseUrl("mysql");
    const saver = await DrizzleSaver.fromUrl(url);
    await saver.setup();
    await saver.close();
    admin = await mysql.createConnection(url);
    for (let n = 0; n < SLOW_TRIGGERS; n++) await admin.query(slowTrigger(n));
  }, 120_000);

  afterAll(async () => {
    await admin?.end();
  });

  it("is flushed by the saver, whose write then goes through", async () => {
    const connection = await mysql.createConnection(url);
    // The saver's statements, to see that its put met the broken instance (it flushed the table).
    const sent: string[] = [];
    const saver = new DrizzleSaver(drizzle(connection, { logger: { logQuery: (query) => sent.push(query) } }));
    try {
      let repaired = false;
      for (let attempt = 0; attempt < ATTEMPTS && !repaired; attempt++) {
        await poisonTableCache(url, admin, connection);
        sent.length = 0;
        const saved = await put(saver, `after-a-kill-${attempt}`);
        repaired = sent.some((query) => /flush tables/i.test(query));
        expect((await saver.getTuple(saved))?.checkpoint.channel_values).toEqual({ a: "A" });
      }
      expect(repaired).toBe(true);
      expect(await refusesWrites(connection)).toBe(false);
    } finally {
      await saver.close();
      await connection.end();
    }
  }, 240_000);

  it("is named, with its remedy, to a user who may not flush tables; nothing is written", async () => {
    const user = `lgcd_noreload_${process.pid}`;
    const database = new URL(url).pathname.slice(1);
    // Both hosts a loopback client may be taken for (an anonymous ''@'localhost' would win over '%').
    const hosts = ["localhost", "127.0.0.1"];
    for (const host of hosts) {
      await admin.query(`create user '${user}'@'${host}' identified by 'pw'`);
      await admin.query(`grant select, insert, update, delete on \`${database}\`.* to '${user}'@'${host}'`);
    }
    try {
      const limited = new URL(url);
      limited.username = user;
      limited.password = "pw";
      const connection = await mysql.createConnection(limited.toString());
      const saver = new DrizzleSaver(drizzle(connection));
      try {
        let refused: unknown;
        let threadId = "";
        for (let attempt = 0; attempt < ATTEMPTS && refused === undefined; attempt++) {
          await poisonTableCache(url, admin, connection);
          threadId = `no-reload-${attempt}`;
          // A put that went through did not meet the broken instance: try again on a new thread.
          refused = await put(saver, threadId).then(
            () => undefined,
            (error: unknown) => error,
          );
        }
        expect(refused).toBeInstanceOf(CheckpointSaverError);
        expect(String((refused as Error).message)).toMatch(/FLUSH TABLES checkpoints.*RELOAD/);
        await admin.query("flush tables checkpoints");
        expect(await saver.getTuple(config(threadId))).toBeUndefined();
      } finally {
        await saver.close();
        await connection.end();
      }
    } finally {
      for (const host of hosts) await admin.query(`drop user '${user}'@'${host}'`);
    }
  }, 240_000);
});
