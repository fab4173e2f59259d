/**
 * Background WAL checkpoints on better-sqlite3 files (src/drivers/wal-checkpointer.ts): a
 * worker thread takes the checkpoints over under sustained writes and the connection's own
 * threshold is raised meanwhile, nothing is lost, and nothing of it outlives its use.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { drizzle } from "drizzle-orm/better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { walCheckpointerOf } from "../../src/drivers/wal-checkpointer.js";
import { DrizzleSaver, InvalidInputError } from "../../src/index.js";
import { sleep, startChild } from "../reliability/helpers.js";
import { writeSteps } from "./wal-writes.js";

const dir = mkdtempSync(join(tmpdir(), "wal-checkpointer-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
function walDatabase(journal = "WAL"): Database.Database {
  const sqlite = new Database(join(dir, `db-${files++}.sqlite`));
  sqlite.pragma(`journal_mode = ${journal}`);
  sqlite.pragma("synchronous = NORMAL");
  return sqlite;
}

const threshold = (sqlite: Database.Database) => sqlite.pragma("wal_autocheckpoint", { simple: true });

async function until(condition: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await sleep(20);
  }
}

describe("background WAL checkpoints (better-sqlite3 files)", () => {
  it("a worker checkpoints under sustained writes, the writer's threshold is raised meanwhile, and every write reads back", async () => {
    const sqlite = walDatabase();
    const saver = new DrizzleSaver(drizzle(sqlite));
    await saver.setup();
    const checkpointer = walCheckpointerOf(sqlite);
    expect(threshold(sqlite)).toBe(1000);
    await writeSteps(saver, "t1", 20);
    expect(checkpointer?.checkpoints()).toBe(0); // a short burst starts nothing
    // Writes go on until the worker has checkpointed (it starts in a thread of its own: slower under load).
    const deadline = Date.now() + 30_000;
    for (let round = 0; (checkpointer?.checkpoints() ?? 0) === 0; round++) {
      if (Date.now() > deadline) throw new Error("no background checkpoint within 30 s of sustained writes");
      await writeSteps(saver, `t${round % 3}`, 20);
      await sleep(5);
    }
    expect(checkpointer?.checkpoints()).toBeGreaterThan(0);
    expect(threshold(sqlite)).toBe(4000);

    const histories = await Promise.all(
      ["t0", "t1", "t2"].map(async (threadId) => {
        const tuples = [];
        for await (const tuple of saver.list({ configurable: { thread_id: threadId } })) tuples.push(tuple);
        return tuples;
      }),
    );
    for (const tuples of histories) {
      expect(tuples.length).toBeGreaterThan(0);
      expect(tuples.length % 20).toBe(0);
      for (const tuple of tuples) expect(tuple.pendingWrites).toHaveLength(2);
    }
    expect(sqlite.pragma("integrity_check", { simple: true })).toBe("ok");

    checkpointer?.stop();
    await until(() => threshold(sqlite) === 1000, "the writer's threshold is put back");
    expect(checkpointer?.checkpoints()).toBe(0);
    sqlite.close();
  }, 60_000);

  it("backgroundCheckpoints: false keeps checkpoints on the writing thread", async () => {
    const sqlite = walDatabase();
    const saver = new DrizzleSaver(drizzle(sqlite), { backgroundCheckpoints: false });
    await saver.setup();
    for (let round = 0; round < 8; round++) await writeSteps(saver, `t${round}`, 20);
    expect(walCheckpointerOf(sqlite)?.checkpoints()).toBe(0);
    expect(threshold(sqlite)).toBe(1000);
    sqlite.close();
    expect(() => new DrizzleSaver(drizzle(walDatabase()), { backgroundCheckpoints: "yes" as never })).toThrow(
      InvalidInputError,
    );
  }, 60_000);

  it("starts no worker outside WAL mode or for an in-memory database", async () => {
    const sqlite = walDatabase("DELETE");
    const saver = new DrizzleSaver(drizzle(sqlite));
    await saver.setup();
    for (let round = 0; round < 8; round++) await writeSteps(saver, `t${round}`, 20);
    expect(walCheckpointerOf(sqlite)?.checkpoints()).toBe(0);
    expect(threshold(sqlite)).toBe(1000);
    sqlite.close();
    const memory = new Database(":memory:");
    expect(walCheckpointerOf(memory)).toBeUndefined();
    memory.close();
  }, 60_000);

  it("fromUrl's close stops the worker: its connection to the file closes too", async () => {
    const file = join(dir, "from-url.sqlite");
    const url = `file:${file}`;
    const saver = await DrizzleSaver.fromUrl(url);
    await saver.setup();
    for (let round = 0; round < 20; round++) await writeSteps(saver, `t${round}`, 20);
    await saver.close();
    // Leaving WAL mode needs the only connection to the file: the worker's must be gone
    // well before it would have stopped on its own (30 idle seconds).
    const probe = new Database(file);
    const leavesWal = () => {
      try {
        return probe.pragma("journal_mode = DELETE", { simple: true }) === "delete";
      } catch {
        return false;
      }
    };
    await until(leavesWal, "the worker's connection is closed", 10_000);
    probe.pragma("journal_mode = WAL");
    probe.close();
    const again = await DrizzleSaver.fromUrl(url);
    let count = 0;
    for await (const _ of again.list({}, { limit: 10_000 })) count++;
    expect(count).toBe(400);
    await again.close();
  }, 60_000);

  it("never keeps the process alive", async () => {
    const child = startChild(join("test/drivers/workers", "busy-writer.ts"), { file: join(dir, "busy.sqlite") });
    await child.waitFor((message) => message.kind === "started", "the child's worker checkpointed");
    // Timed from there: an idle worker stops by itself after 30 s, so only an unreferenced one exits sooner.
    const code = await Promise.race([child.exited, sleep(15_000).then(() => "still running")]);
    if (code === "still running") child.process.kill();
    expect(code).toBe(0);
  }, 90_000);
});
