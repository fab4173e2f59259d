/**
 * The order of a put's locks against a removal's: every unit that changes a thread takes
 * the thread's row first. A put that relies on its parent's stored values share-locks the
 * parent; it used to take that lock before the thread's row, so a put waiting for the row
 * a removal held (deleteThread, prune, a sweep) held the parent the removal was about to
 * delete: a deadlock, every time the two met. Found by a multi-process stress (puts,
 * deleteThread, prune, copies, sweeps on shared threads): PostgreSQL broke 64 deadlocks
 * in 30 s and 3 puts failed with WriteConflictError after ten tries.
 *
 * Here a second connection plays the removal, in its documented order: it locks the
 * thread's row, waits until the put is blocked on that row, then asks for the parent's
 * row without waiting (NOWAIT). The put must hold nothing of the thread while it waits,
 * and once the removal commits it must fail with MissingParentError, writing nothing.
 */
import { type CheckpointMetadata, uuid6 } from "@langchain/langgraph-checkpoint";
import mysql from "mysql2/promise";
import postgres from "postgres";
import { afterEach, describe, expect, it } from "vitest";
import { MissingParentError } from "../../src/index.js";
import { freshSaver } from "../helpers/databases.js";
import { openRaw } from "../helpers/raw.js";
import { channelValue, checkpointOf, describeError, sleep } from "./helpers.js";

/** The removal's connection: a transaction of its own, statements with `?` placeholders. */
interface Removal {
  run(text: string, params: unknown[]): Promise<void>;
  /** Whether the put waits for the thread's row. */
  someoneWaits(): Promise<boolean>;
  commit(): Promise<void>;
  close(): Promise<void>;
}

async function pgRemoval(url: string): Promise<Removal> {
  const client = postgres(url, { max: 2, onnotice: () => {} });
  const tx = await client.reserve();
  await tx`begin`;
  const numbered = (text: string) => {
    let n = 0;
    return text.replace(/\?/g, () => `$${++n}`);
  };
  return {
    run: async (text, params) => void (await tx.unsafe(numbered(text), params as never[])),
    someoneWaits: async () =>
      (await client`select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`)
        .length > 0,
    commit: async () => void (await tx`commit`),
    close: async () => {
      tx.release();
      await client.end();
    },
  };
}

async function mysqlRemoval(url: string): Promise<Removal> {
  const connection = await mysql.createConnection(url);
  const watcher = await mysql.createConnection(url);
  await connection.query("set transaction isolation level read committed");
  await connection.query("start transaction");
  return {
    run: async (text, params) => void (await connection.query(text, params)),
    someoneWaits: async () => {
      // The put's first write, the thread's row, in progress (a compound statement shows the part it runs).
      const [rows] = await watcher.query(
        "select 1 from information_schema.processlist where db = database() and id <> connection_id() and info like 'insert into `checkpoint_threads`%'",
      );
      return (rows as unknown[]).length > 0;
    },
    commit: async () => void (await connection.query("commit")),
    close: async () => {
      await connection.end();
      await watcher.end();
    },
  };
}

const TARGETS = [
  { name: "postgres", dialect: "postgres" as const },
  { name: "mysql", dialect: "mysql" as const },
];

describe.each(TARGETS)("a put relying on its parent, meeting a removal of its thread, on $name", (target) => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  it("waits for the thread's row holding no lock of the thread, then fails with MissingParentError", async () => {
    const { saver, url } = await freshSaver(target.dialect);
    cleanup.push(() => saver.close());
    const threadId = "lock-order";
    const versions = { a: "1.a", b: "1.b" };
    const first = await saver.put(
      { configurable: { thread_id: threadId, checkpoint_ns: "" } },
      checkpointOf(uuid6(0), { a: channelValue("a1", 100), b: channelValue("b1", 100) }, versions),
      { source: "loop", step: 0, parents: {} } as CheckpointMetadata,
      versions,
    );
    const parentId = first.configurable?.checkpoint_id as string;

    const removal = target.dialect === "postgres" ? await pgRemoval(url) : await mysqlRemoval(url);
    cleanup.push(() => removal.close());
    // The removal's first lock: the thread's row.
    await removal.run("select 1 from checkpoint_threads where thread_id = ? for update", [threadId]);

    // The put keeps b: it relies on its parent's value of b, and share-locks the parent.
    const put = saver
      .put(
        first,
        checkpointOf(uuid6(1), { a: channelValue("a2", 100), b: channelValue("b1", 100) }, { a: "2.a", b: "1.b" }),
        { source: "loop", step: 1, parents: {} } as CheckpointMetadata,
        { a: "2.a" },
      )
      .then(
        () => "stored",
        (error: unknown) => (error instanceof MissingParentError ? "refused" : `failed: ${describeError(error)}`),
      );
    const deadline = Date.now() + 10_000;
    while (!(await removal.someoneWaits())) {
      if (Date.now() > deadline) throw new Error("the put never waited for the thread's row");
      await sleep(20);
    }

    // The removal goes on in its order: the thread's checkpoints. A put holding the
    // parent now would make this wait (and, without NOWAIT, deadlock).
    const parentLock = await removal
      .run(`select 1 from checkpoints where thread_id = ? and checkpoint_id = ? for update nowait`, [
        threadId,
        parentId,
      ])
      .then(
        () => "free",
        (error: unknown) => `held by the waiting put: ${describeError(error)}`,
      );
    expect(parentLock).toBe("free");
    for (const table of ["checkpoint_writes", "checkpoint_blobs", "checkpoints", "checkpoint_threads"]) {
      await removal.run(`delete from ${table} where thread_id = ?`, [threadId]);
    }
    await removal.commit();
    expect(await put).toBe("refused");

    const raw = await openRaw(target.dialect, url);
    cleanup.push(() => raw.close());
    for (const table of ["checkpoints", "checkpoint_blobs", "checkpoint_threads"]) {
      const [row] = await raw.query(`select count(*) as n from ${table} where thread_id = ?`, [threadId]);
      expect(Number(row.n), table).toBe(0);
    }
  }, 30_000);
});
