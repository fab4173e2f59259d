/**
 * The locks of a MySQL put, checked by hand: two puts to different threads, replayed
 * statement by statement on two connections so that each has run everything before its
 * checkpoint insert when the other inserts. Puts to different threads share no row, so
 * neither may wait for the other, let alone deadlock. Under REPEATABLE READ the put's
 * check for its own absent checkpoint key took a gap lock, and two such gap locks on one
 * partition's last gap made the two inserts a deadlock (ER_LOCK_DEADLOCK), every time.
 */
import { uuid6 } from "@langchain/langgraph-checkpoint";
import { drizzle } from "drizzle-orm/mysql2";
import mysql from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DrizzleSaver } from "../../src/index.js";
import { freshDatabaseUrl } from "../helpers/databases.js";
import { channelValue, checkpointOf, describeError } from "./helpers.js";

/** The statements one saver call sent, as drizzle's logger saw them (values are inlined as literals). */
type Statements = string[];

/**
 * The statements a logged call runs, one by one: on MariaDB a write unit is one compound
 * statement (src/dialects/mysql-units.ts), whose transaction and writes are taken
 * apart here so they can be replayed interleaved with another's (its precondition
 * check becomes the locking read it holds).
 */
function unitStatements(logged: Statements): Statements {
  return logged.flatMap((statement) => {
    if (!/^begin not atomic\n/.test(statement)) return [statement];
    const body = statement.split("\n").slice(2, -1).join("\n");
    return body
      .split(/;\n/)
      .map((part) => part.replace(/;$/, "").replace(/^if not exists \(([\s\S]*)\) then signal [\s\S]*$/, "$1"))
      .filter((part) => part.trim() !== "" && part !== "end if");
  });
}

/** Saves `threads` (one new checkpoint each) on a logging saver and returns each put's statements. */
async function recordPuts(url: string, threads: string[]): Promise<Map<string, Statements>> {
  let log: Statements = [];
  const pool = mysql.createPool({ uri: url, connectionLimit: 2, supportBigNumbers: true });
  const saver = new DrizzleSaver(drizzle(pool, { logger: { logQuery: (query) => log.push(query) } }));
  try {
    await saver.setup();
    const recorded = new Map<string, Statements>();
    for (const threadId of threads) {
      log = [];
      const checkpoint = checkpointOf(uuid6(0), { a: channelValue(threadId, 64) }, { a: "1" });
      await saver.put({ configurable: { thread_id: threadId, checkpoint_ns: "" } }, checkpoint, { step: 0 } as never, {
        a: "1",
      });
      recorded.set(threadId, unitStatements(log));
    }
    return recorded;
  } finally {
    await saver.close();
    await pool.end();
  }
}

/** Two of `threads` whose rows land in the same partition of the checkpoints table. */
async function samePartition(connection: mysql.Connection, threads: string[]): Promise<[string, string]> {
  const partitionOf = new Map<string, string>();
  for (let p = 0; p < 8; p++) {
    const [found] = (await connection.query(
      `select cast(thread_id as char) as t from checkpoints partition (p${p})`,
    )) as [{ t: string }[], unknown];
    for (const { t } of found) partitionOf.set(t, `p${p}`);
  }
  for (const [i, a] of threads.entries()) {
    const b = threads.slice(i + 1).find((other) => partitionOf.get(other) === partitionOf.get(a));
    if (b) return [a, b];
  }
  throw new Error("no two threads share a partition (nine threads in eight partitions always do)");
}

describe("mysql: the locks of a put", () => {
  let recordUrl: string;
  let replayUrl: string;
  let threads: Map<string, Statements>;
  let pair: [string, string];

  beforeAll(async () => {
    recordUrl = await freshDatabaseUrl("mysql");
    replayUrl = await freshDatabaseUrl("mysql");
    const candidates = Array.from({ length: 9 }, (_, i) => `locks-thread-${i}`);
    threads = await recordPuts(recordUrl, candidates);
    const connection = await mysql.createConnection(recordUrl);
    try {
      pair = await samePartition(connection, candidates);
    } finally {
      await connection.end();
    }
    // The replay database: the same tables, empty.
    const saver = await DrizzleSaver.fromUrl(replayUrl);
    await saver.setup();
    await saver.close();
  });

  afterAll(async () => {
    const admin = await mysql.createConnection(recordUrl);
    for (const url of [recordUrl, replayUrl]) await admin.query(`drop database ${new URL(url).pathname.slice(1)}`);
    await admin.end();
  });

  it("puts to two threads of one partition neither wait for nor deadlock each other", async () => {
    const [a, b] = pair.map((thread) => threads.get(thread) as Statements);
    const insertAt = (statements: Statements) => statements.findIndex((s) => /^insert into `checkpoints`/.test(s));
    for (const statements of [a, b]) {
      // The unit is one transaction that ends with the checkpoint insert and a commit.
      expect(statements.some((s) => /^(begin|start transaction)/i.test(s))).toBe(true);
      expect(insertAt(statements)).toBeGreaterThan(0);
    }
    const first = await mysql.createConnection({ uri: replayUrl, supportBigNumbers: true });
    const second = await mysql.createConnection({ uri: replayUrl, supportBigNumbers: true });
    try {
      // No wait at all: a lock wait would be a conflict between different threads' rows.
      for (const connection of [first, second]) await connection.query("set innodb_lock_wait_timeout = 2");
      for (const statement of a.slice(0, insertAt(a))) await first.query(statement);
      for (const statement of b.slice(0, insertAt(b))) await second.query(statement);
      const results = await Promise.allSettled([
        first.query(a[insertAt(a)]),
        // After the first insert has reached the server (and, before the fix, waited there).
        new Promise((resolve) => setTimeout(resolve, 200)).then(() => second.query(b[insertAt(b)])),
      ]);
      const failures = results.flatMap((r) => (r.status === "rejected" ? [describeError(r.reason)] : []));
      expect(failures).toEqual([]);
      for (const statement of a.slice(insertAt(a) + 1)) await first.query(statement);
      for (const statement of b.slice(insertAt(b) + 1)) await second.query(statement);
    } finally {
      await first.end();
      await second.end();
    }
    const saver = await DrizzleSaver.fromUrl(replayUrl);
    try {
      for (const thread of pair) {
        const tuple = await saver.getTuple({ configurable: { thread_id: thread, checkpoint_ns: "" } });
        expect(tuple?.checkpoint.channel_values.a).toEqual(channelValue(thread, 64));
      }
    } finally {
      await saver.close();
    }
  });
});
