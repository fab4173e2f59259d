import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import { readMigrationFiles } from "drizzle-orm/migrator";
import type { Miniflare } from "miniflare";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Dialect } from "../../src/dialects/dialect.js";
import {
  DrizzleSaver,
  exportThreads,
  importThreads,
  MissingParentError,
  UnsupportedDriverError,
} from "../../src/index.js";
import { findMigrationsFolder } from "../../src/savers/migrations/folder.js";
import { freshSaver } from "../helpers/databases.js";
import { type D1Binding, openLocalD1 } from "../helpers/miniflare.js";
import { checkpointOf } from "../reliability/helpers.js";
import { writeSyntheticFile } from "../transfer/support.js";

let miniflare: Miniflare;
let binding: D1Binding;
/** The binding whose batches `beforeNextBatch` precedes. */
let intercepted: D1Binding;
/** Runs before the next batch reaches D1 (then forgets itself). */
let beforeNextBatch: (() => Promise<void>) | undefined;
/** Runs after the next batch that D1 ran to its end (then forgets itself). */
let afterNextBatch: (() => Promise<void>) | undefined;
let saver: DrizzleSaver;
/** A second saver on the same database, whose batches are never intercepted. */
let other: DrizzleSaver;

beforeAll(async () => {
  ({ miniflare, binding } = await openLocalD1());
  // The binding as the saver sees it: its batches can be preceded by another client's work.
  intercepted = new Proxy(binding, {
    get(target, key) {
      const value = Reflect.get(target, key);
      if (key !== "batch") return typeof value === "function" ? value.bind(target) : value;
      return async (statements: unknown[]) => {
        const before = beforeNextBatch;
        beforeNextBatch = undefined;
        await before?.();
        const results = await target.batch(statements as never);
        const after = afterNextBatch;
        afterNextBatch = undefined;
        await after?.();
        return results;
      };
    },
  });
  saver = new DrizzleSaver(drizzle(intercepted));
  other = new DrizzleSaver(drizzle(binding));
  await saver.setup();
});

afterAll(async () => {
  await miniflare?.dispose();
});

const dialectOf = (of: DrizzleSaver) => (of as unknown as { dialect: Dialect }).dialect;

async function count(table: string, threadId: string): Promise<number> {
  const [row] = await dialectOf(other).query(
    sql`select count(*) as n from ${sql.identifier(table)} where thread_id = ${threadId}`,
  );
  return Number(row.n);
}

const TABLES = ["checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_threads"];

async function rowsOf(threadId: string): Promise<number[]> {
  return Promise.all(TABLES.map((table) => count(table, threadId)));
}

const metadata = (step: number) => ({ source: "loop", step, parents: {} }) as CheckpointMetadata;

describe("Cloudflare D1 (batch-only)", () => {
  it("a put whose parent a deleteThread removes just before its batch runs fails with MissingParentError and writes nothing", async () => {
    const thread = "raced";
    const root = { configurable: { thread_id: thread, checkpoint_ns: "" } };
    const parent = await saver.put(root, checkpointOf("1", { a: "kept" }, { a: 1 }), metadata(0), { a: 1 });
    // The child relies on the parent's stored value of "a": the parent must exist when it lands.
    // Everything the put reads before its batch still sees the parent; the delete lands
    // between those reads and the batch, where an interactive transaction would hold a lock.
    beforeNextBatch = () => other.deleteThread(thread);
    const child = saver.put(parent, checkpointOf("2", { b: "new" }, { a: 1, b: 2 }), metadata(1), { b: 2 });
    await expect(child).rejects.toBeInstanceOf(MissingParentError);
    await expect(child).rejects.toThrow(
      /parent checkpoint "1" of thread "raced" no longer exists.*nothing was written/,
    );
    expect(await rowsOf(thread)).toEqual([0, 0, 0, 0]);
  });

  it("a put racing a deleteThread either lands first and is deleted with the thread, or fails and writes nothing", async () => {
    for (let round = 0; round < 10; round++) {
      const thread = `race-${round}`;
      const root = { configurable: { thread_id: thread, checkpoint_ns: "" } };
      const parent = await saver.put(root, checkpointOf("1", { a: "kept" }, { a: 1 }), metadata(0), { a: 1 });
      const [put] = await Promise.allSettled([
        saver.put(parent, checkpointOf("2", { b: "new" }, { a: 1, b: 2 }), metadata(1), { b: 2 }),
        other.deleteThread(thread),
      ]);
      if (put.status === "rejected") expect(put.reason).toBeInstanceOf(MissingParentError);
      expect(await rowsOf(thread)).toEqual([0, 0, 0, 0]);
    }
  });

  it("putWrites to a checkpoint deleted just before its batch fails with MissingParentError and writes nothing", async () => {
    const thread = "writes-raced";
    const root = { configurable: { thread_id: thread, checkpoint_ns: "" } };
    const stored = await saver.put(root, checkpointOf("1", { a: "x" }, { a: 1 }), metadata(0), { a: 1 });
    beforeNextBatch = () => other.deleteThread(thread);
    await expect(saver.putWrites(stored, [["a", "late"]], "task")).rejects.toBeInstanceOf(MissingParentError);
    expect(await rowsOf(thread)).toEqual([0, 0, 0, 0]);
  });

  it("a batch with a failing statement leaves nothing written", async () => {
    const thread = "failing-batch";
    const root = { configurable: { thread_id: thread, checkpoint_ns: "" } };
    await saver.put(root, checkpointOf("1", { a: "x" }, { a: 1 }), metadata(0), { a: 1 });
    const before = await rowsOf(thread);
    const dialect = dialectOf(saver);
    const failing = dialect.atomically([
      sql`delete from checkpoint_blobs where thread_id = ${thread}`,
      sql`update checkpoints set metadata = '{}' where thread_id = ${thread}`,
      sql`insert into checkpoints (thread_id) values (${thread})`, // NOT NULL columns missing
    ]);
    await expect(failing).rejects.toThrow(/NOT NULL constraint failed/);
    expect(await rowsOf(thread)).toEqual(before);
    const tuple = await saver.getTuple(root);
    expect(tuple?.checkpoint.channel_values).toEqual({ a: "x" });
    expect(tuple?.metadata).toMatchObject({ source: "loop", step: 0 });
  });

  it("refuses an interactive transaction with an error naming D1, running nothing", async () => {
    let ran = false;
    const attempt = dialectOf(saver).executor.transaction(async () => {
      ran = true;
    });
    await expect(attempt).rejects.toBeInstanceOf(UnsupportedDriverError);
    await expect(attempt).rejects.toThrow(/Cloudflare D1 runs no interactive transactions/);
    expect(ran).toBe(false);
  });

  it("storageStats fails with an error naming D1 (it has no dbstat table)", async () => {
    await expect(saver.storageStats()).rejects.toThrow(/Cloudflare D1/);
  });

  it("concurrent setup() calls on a fresh database apply each migration once", async () => {
    const { miniflare: fresh, binding: db } = await openLocalD1();
    try {
      const savers = [new DrizzleSaver(drizzle(db)), new DrizzleSaver(drizzle(db)), new DrizzleSaver(drizzle(db))];
      const reports = await Promise.all(savers.map((one) => one.setup()));
      // Each migration is reported by the one call that applied it.
      const reported = reports.flat().map((migration) => migration.createdAt);
      expect(new Set(reported).size).toBe(reported.length);
      const rows = await dialectOf(savers[0]).query(
        sql`select created_at, count(*) as n from langgraph_checkpoint_migrations group by created_at`,
      );
      expect(rows.length).toBe(reported.length);
      for (const row of rows) expect(Number(row.n)).toBe(1);
      expect((await savers[0].migrationStatus()).pending).toEqual([]);
      expect(await savers[1].setup()).toEqual([]);
      // A caller that read "not recorded" before another recorded it: its batch stops at the guard.
      const dialect = dialectOf(savers[2]);
      const [first] = readMigrationFiles({ migrationsFolder: findMigrationsFolder("sqlite") });
      const table = sql`${sql.identifier("langgraph_checkpoint_migrations")}`;
      expect(await dialect.applyMigration?.(dialect.executor, table, first)).toBe(false);
    } finally {
      await fresh.dispose();
    }
  });

  it("binds more than D1's 100 parameters per statement: the smallest values become literals", async () => {
    const thread = "many";
    const root = { configurable: { thread_id: thread, checkpoint_ns: "" } };
    const values = Object.fromEntries(
      Array.from({ length: 60 }, (_, i) => [`c${i}`, i % 2 ? `it's ${i}\u0000 ${"x".repeat(i * 50)}` : { n: i }]),
    );
    const versions = Object.fromEntries(Object.keys(values).map((key) => [key, 1]));
    const stored = await saver.put(root, checkpointOf("1", values, versions), metadata(0), versions);
    const writes = Array.from({ length: 40 }, (_, i) => [`w${i}`, `o'clock ${i}`] as [string, unknown]);
    await saver.putWrites(stored, writes, "task");
    const tuple = await saver.getTuple(stored);
    expect(tuple?.checkpoint.channel_values).toEqual(values);
    expect(tuple?.pendingWrites?.map(([, channel, value]) => [channel, value])).toEqual(writes);
  });

  it("a put of 1,500 channels and a putWrites of 1,500 writes stay within D1's 100 KB statement text", async () => {
    const thread = "wide";
    const root = { configurable: { thread_id: thread, checkpoint_ns: "" } };
    const values = Object.fromEntries(
      Array.from({ length: 1500 }, (_, i) => [`channel-${i}`, `value ${i} ${"v".repeat(40)}`]),
    );
    const versions = Object.fromEntries(Object.keys(values).map((key) => [key, 1]));
    const stored = await saver.put(root, checkpointOf("1", values, versions), metadata(0), versions);
    const writes = Array.from(
      { length: 1500 },
      (_, i) => [`w${i}`, `o'clock ${i} ${"w".repeat(40)}`] as [string, unknown],
    );
    await saver.putWrites(stored, writes, "task");
    const tuple = await saver.getTuple(stored);
    expect(tuple?.checkpoint.channel_values).toEqual(values);
    expect(tuple?.pendingWrites?.map(([, channel, value]) => [channel, value])).toEqual(writes);
  });

  it("a statement of more than 100 values reads back every one of them, whatever the text around them", async () => {
    // 100 values of 8 bytes or more stay bound; the 50 short strings become literals.
    const values: unknown[] = Array.from(
      { length: 150 },
      (_, i) => [-i - 1, i + 0.5, "'?--/*", `\u0000${i % 10}`, Buffer.from([i, 0, 255, 39]), null][i % 6],
    );
    // D1 returns at most 100 columns too: one row per value.
    const rows = values.map((value, i) => sql`(${sql.raw(String(i))}, ${value})`);
    const read = await dialectOf(saver).query(
      sql`select '?' as "q?", 1 -${-5} as minus, column2 as v from (values ${sql.join(rows, sql`, `)}) order by column1`,
    );
    expect(read).toHaveLength(values.length);
    expect(read[0]["q?"]).toBe("?");
    expect(read[0].minus).toBe(6);
    expect(read.map((row) => row.v)).toEqual(values);
  });

  it("imports a thread exported from a SQLite file: same checkpoints and writes; again, it is unchanged", async () => {
    const origin = await freshSaver("sqlite");
    try {
      const root = { configurable: { thread_id: "imported", checkpoint_ns: "" } };
      const first = await origin.saver.put(root, checkpointOf("1", { a: [1, 2] }, { a: 1 }), metadata(0), { a: 1 });
      const second = await origin.saver.put(first, checkpointOf("2", { a: [1, 2, 3] }, { a: 2 }), metadata(1), {
        a: 2,
      });
      await origin.saver.putWrites(second, [["a", "pending"]], "task");
      const file = join(mkdtempSync(join(tmpdir(), "lgcd-d1-")), "thread.jsonl");
      await exportThreads({ url: origin.url }, file);
      const target = drizzle(binding);
      const imported = await importThreads(target, { file });
      expect(imported).toMatchObject({ imported: 1, failed: [] });
      const want = await origin.saver.getTuple(root);
      const got = await saver.getTuple(root);
      expect(got?.checkpoint).toEqual(want?.checkpoint);
      expect(got?.pendingWrites).toEqual(want?.pendingWrites);
      // The per-thread row was recomputed once the thread was in place.
      const threads = await saver.searchThreads({ sortBy: "threadId", limit: 1000 });
      expect(threads.find((thread) => thread.threadId === "imported")).toMatchObject({
        checkpoints: 2,
        latestCheckpointId: "2",
      });
      expect(await importThreads(target, { file })).toMatchObject({ unchanged: 1, failed: [] });
    } finally {
      await origin.saver.close();
    }
  });

  it("an encrypted copy of a thread written meanwhile is whole from its batch on: a changed source is read again", async () => {
    const encryption = { keys: { k1: Buffer.alloc(32, 7) }, activeKeyId: "k1" };
    const sealing = new DrizzleSaver(drizzle(intercepted), { encryption });
    const writer = new DrizzleSaver(drizzle(binding), { encryption });
    const root = { configurable: { thread_id: "sealed-src", checkpoint_ns: "" } };
    const target = { configurable: { thread_id: "sealed-dst", checkpoint_ns: "" } };
    const first = await writer.put(root, checkpointOf("1", { a: "one" }, { a: 1 }), metadata(0), { a: 1 });
    // Lands after the copy read the source's values, before its batch copies them as bytes.
    beforeNextBatch = async () => {
      const second = await writer.put(first, checkpointOf("2", { a: "two" }, { a: 2 }), metadata(1), { a: 2 });
      await writer.putWrites(second, [["a", "pending"]], "task");
    };
    // The first batch that wrote anything: the copy must already read whole (with no later step to finish it).
    let copyAfterItsBatch: Awaited<ReturnType<DrizzleSaver["getTuple"]>>;
    afterNextBatch = async () => {
      copyAfterItsBatch = await writer.getTuple(target);
    };
    await sealing.copyThread("sealed-src", "sealed-dst");
    expect(beforeNextBatch).toBeUndefined();
    expect(afterNextBatch).toBeUndefined();
    for (const copy of [copyAfterItsBatch, await writer.getTuple(target)]) {
      expect(copy?.checkpoint.channel_values).toEqual({ a: "two" });
      expect(copy?.pendingWrites).toEqual([["task", "a", "pending"]]);
    }
  });

  it("copyThread of an unknown source is refused, with and without encryption, writing nothing", async () => {
    const encryption = { keys: { k1: Buffer.alloc(32, 7) }, activeKeyId: "k1" };
    for (const copier of [saver, new DrizzleSaver(drizzle(binding), { encryption })]) {
      await expect(copier.copyThread("missing-src", "missing-dst")).rejects.toThrow(
        'copyThread: source thread "missing-src" has no checkpoints; nothing was copied',
      );
    }
    expect(await rowsOf("missing-dst")).toEqual([0, 0, 0, 0]);
  });

  it("an encrypted copy of a source that changes before every batch ends whole: it re-seals what the last one left", async () => {
    const encryption = { keys: { k1: Buffer.alloc(32, 7) }, activeKeyId: "k1" };
    const sealing = new DrizzleSaver(drizzle(intercepted), { encryption });
    const writer = new DrizzleSaver(drizzle(binding), { encryption });
    const root = { configurable: { thread_id: "busy-src", checkpoint_ns: "" } };
    let latest = await writer.put(root, checkpointOf("0", { a: "v0" }, { a: 0 }), metadata(0), { a: 0 });
    let step = 0;
    let batches = 0;
    const writeBeforeEveryBatch = async () => {
      batches++;
      step++;
      latest = await writer.put(latest, checkpointOf(String(step), { a: `v${step}` }, { a: step }), metadata(step), {
        a: step,
      });
      beforeNextBatch = writeBeforeEveryBatch;
    };
    beforeNextBatch = writeBeforeEveryBatch;
    await sealing.copyThread("busy-src", "busy-dst");
    beforeNextBatch = undefined;
    // Five checked batches, each undone by its check; the sixth copies unchecked, then the leftovers are re-sealed.
    expect(batches).toBe(7);
    const copy = await writer.getTuple({ configurable: { thread_id: "busy-dst", checkpoint_ns: "" } });
    expect(copy?.checkpoint.id).toBe("6");
    expect(copy?.checkpoint.channel_values).toEqual({ a: "v6" });
    const ids: string[] = [];
    for await (const tuple of writer.list({ configurable: { thread_id: "busy-dst" } })) ids.push(tuple.checkpoint.id);
    expect(ids).toEqual(["6", "5", "4", "3", "2", "1", "0"]);
  });

  it("an import whose thread a put creates between the import's check and its move fails that thread, merging nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "lgcd-d1-import-race-"));
    const file = join(dir, "threads.jsonl");
    await writeSyntheticFile(file, { threads: 1, checkpoints: 3, prefix: "raced-import" });
    // The import's batches: its staging owner, the staging cleared, the staged rows; then it
    // checks the thread is empty (reads) and moves the rows in (the fourth batch).
    const beforeBatch = (skip: number, run: () => Promise<void>) => {
      beforeNextBatch = skip === 0 ? run : async () => beforeBatch(skip - 1, run);
    };
    beforeBatch(3, async () => {
      await other.put(
        { configurable: { thread_id: "raced-import-0", checkpoint_ns: "" } },
        checkpointOf("live", { a: "live" }, { a: 1 }),
        metadata(0),
        { a: 1 },
      );
    });
    const summary = await importThreads(drizzle(intercepted), { file });
    expect(beforeNextBatch).toBeUndefined();
    expect(summary).toMatchObject({ imported: 0 });
    expect(summary.failed).toEqual([
      { threadId: "raced-import-0", error: expect.stringMatching(/already exists with other content/) },
    ]);
    const ids: string[] = [];
    for await (const tuple of other.list({ configurable: { thread_id: "raced-import-0" } }))
      ids.push(tuple.checkpoint.id);
    expect(ids).toEqual(["live"]);
  });
});
