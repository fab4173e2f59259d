/**
 * A thread's row held by another transaction, for tests of what the saver does beside
 * a lock it cannot take (a put in flight, another process handling the thread).
 */
import mysql from "mysql2/promise";
import postgres from "postgres";
import type { DialectName } from "./databases.js";

/**
 * Holds the thread's row locked (FOR UPDATE) on a connection of its own until the returned
 * release is called: a put then waits inside its unit (on PostgreSQL possibly holding its
 * parent's share lock already), so the replace meets it in flight. SQLite has one writer
 * and nothing to hold: the put and the replace are only started together.
 */
export async function holdThreadRow(dialect: DialectName, url: string, threadId: string): Promise<() => Promise<void>> {
  let release = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  if (dialect === "postgres") {
    const client = postgres(url, { max: 1, onnotice: () => {} });
    let locked = () => {};
    const lockTaken = new Promise<void>((resolve) => {
      locked = resolve;
    });
    const held = client.begin(async (tx) => {
      await tx`select 1 from checkpoint_threads where thread_id = ${threadId} for update`;
      locked();
      await released;
    });
    await lockTaken;
    return async () => {
      release();
      await held;
      await client.end();
    };
  }
  if (dialect === "mysql") {
    const connection = await mysql.createConnection(url);
    await connection.query("start transaction");
    await connection.query("select 1 from checkpoint_threads where thread_id = ? for update", [threadId]);
    return async () => {
      await connection.query("commit");
      await connection.end();
    };
  }
  return async () => {};
}
