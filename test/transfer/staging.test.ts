// Issue 31, finding 6: the staging prefix is reserved. Ids starting with it are refused
// by every call that takes a thread id, with nothing written; staged rows of an import in
// flight (or of a killed one) are never listed, counted, expired, swept or removed by run.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { emptyCheckpoint } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import {
  type DrizzleSaver,
  InvalidInputError,
  importThreads,
  type ThreadStream,
  type TransferRecord,
  type TransferSource,
} from "../../src/index.js";
import { FileSource } from "../../src/transfer/sources/file.js";
import { stagingThreadId } from "../../src/transfer/target.js";
import { DIALECTS, type DialectName } from "../helpers/databases.js";
import { openRaw } from "../lifecycle/support.js";
import { freshTargets, threadIds, writeSyntheticFile } from "./support.js";

const dir = mkdtempSync(join(tmpdir(), "lgcd-staging-"));
const target = freshTargets();
const RESERVED = "__transfer_staging__:mine";

/** Rows of the three tables and the per-thread table, all threads together. */
async function allRows(dialect: DialectName, url: string): Promise<number> {
  const raw = await openRaw(dialect, url);
  try {
    let rows = 0;
    for (const table of ["checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_threads"]) {
      const [row] = await raw.query(`select count(*) as n from ${table}`, []);
      rows += Number(row.n);
    }
    return rows;
  } finally {
    await raw.close();
  }
}

/** A file source whose one thread stops after `pauseAfter` records until `resume()`: an import in flight. */
function pausingSource(path: string, pauseAfter: number) {
  let resume = () => {};
  const resumed = new Promise<void>((resolve) => {
    resume = resolve;
  });
  let reached = () => {};
  const paused = new Promise<void>((resolve) => {
    reached = resolve;
  });
  const file = FileSource.open(path, {}, {});
  async function* records(inner: AsyncIterable<TransferRecord>): AsyncGenerator<TransferRecord> {
    let n = 0;
    for await (const record of inner) {
      if (++n === pauseAfter) {
        reached();
        await resumed;
      }
      yield record;
    }
  }
  const source: TransferSource = {
    description: "paused file",
    async *threads(): AsyncGenerator<ThreadStream> {
      for await (const stream of file.threads()) yield { threadId: stream.threadId, records: records(stream.records) };
    },
    countThreads: () => file.countThreads(),
    close: () => file.close(),
  };
  return { source, paused, resume };
}

async function countCheckpoints(saver: DrizzleSaver, threadId: string): Promise<number> {
  let n = 0;
  for await (const _ of saver.list({ configurable: { thread_id: threadId } })) n++;
  return n;
}

describe.each(DIALECTS)("the staging prefix on %s", (dialect) => {
  it("is refused by every call that takes a thread id, with nothing written", async () => {
    const { saver, url } = await target(dialect);
    const config = { configurable: { thread_id: RESERVED, checkpoint_ns: "" } };
    const checkpoint = emptyCheckpoint();
    const before = await allRows(dialect, url);
    const calls: [string, () => Promise<unknown>][] = [
      ["put", () => saver.put(config, checkpoint, { source: "input", step: -1, parents: {} }, {})],
      [
        "putWrites",
        () => saver.putWrites({ configurable: { ...config.configurable, checkpoint_id: "c" } }, [["a", 1]], "t"),
      ],
      ["getTuple", () => saver.getTuple(config)],
      ["list", () => saver.list(config).next()],
      ["deleteThread", () => saver.deleteThread(RESERVED)],
      ["prune", () => saver.prune([RESERVED])],
      ["prune delete", () => saver.prune([RESERVED], { strategy: "delete" })],
      ["copyThread from", () => saver.copyThread(RESERVED, "elsewhere")],
      ["copyThread to", () => saver.copyThread("elsewhere", RESERVED)],
      ["pinThread", () => saver.pinThread(RESERVED)],
      ["unpinThread", () => saver.unpinThread(RESERVED)],
      ["getDeltaChannelHistory", () => saver.getDeltaChannelHistory({ config, channels: ["a"] })],
    ];
    for (const [name, call] of calls) {
      const error = await call().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, name).toBeInstanceOf(InvalidInputError);
      expect((error as Error).message, name).toMatch(/reserved for threads being imported/);
    }
    expect(await allRows(dialect, url)).toBe(before);
  });

  it("fails an imported thread whose id has the prefix, writing nothing of it", async () => {
    const { url } = await target(dialect);
    const file = join(dir, `reserved-${dialect}.jsonl`);
    await writeSyntheticFile(file, { threads: 2, checkpoints: 3, prefix: "__transfer_staging__:x" });
    const summary = await importThreads(url, { file });
    expect(summary.imported).toBe(0);
    expect(summary.failed.map((f) => f.error)).toEqual([
      expect.stringMatching(/reserved for threads being imported/),
      expect.stringMatching(/reserved for threads being imported/),
    ]);
    expect(await allRows(dialect, url)).toBe(0);
  });

  it("keeps staged rows out of listings, counts, expiry, sweeps and deleteForRuns", { timeout: 60_000 }, async () => {
    const { saver, url } = await target(dialect);
    const file = join(dir, `paused-${dialect}.jsonl`);
    // 60 checkpoints from 2025 (idle), run_id "run-0": 180 records, 100 of them staged at the pause.
    await writeSyntheticFile(file, { threads: 1, checkpoints: 60, prefix: `paused-${dialect}` });
    const threadId = `paused-${dialect}-0`;
    const { source, paused, resume } = pausingSource(file, 150);
    const importing = importThreads(url, source);
    await paused;
    const raw = await openRaw(dialect, url);
    const [staged] = await raw.query("select count(*) as n from checkpoints where thread_id = ?", [
      stagingThreadId(threadId),
    ]);
    await raw.close();
    expect(Number(staged.n)).toBeGreaterThan(0);

    expect(await saver.expireThreads({ idleSince: new Date(), strategy: "keep_latest" })).toBe(0);
    expect(await saver.sweep({ idleFor: "1s", strategy: "keep_latest", dryRun: false })).toMatchObject({ scanned: 0 });
    await saver.deleteForRuns(["run-0"]);
    expect(await threadIds(saver)).toEqual([]);
    // A list across threads, with and without a filter, shows none of the staged checkpoints.
    for (const filter of [undefined, { run_id: "run-0" }]) {
      const listed: string[] = [];
      for await (const tuple of saver.list({}, { filter })) listed.push(tuple.config.configurable?.thread_id);
      expect(listed, JSON.stringify(filter)).toEqual([]);
    }
    expect(await saver.searchThreads()).toEqual([]);
    expect(await saver.countThreads()).toBe(0);
    expect(await saver.expireThreads({ idleSince: new Date() })).toBe(0);
    expect(await saver.searchThreads()).toEqual([]);

    resume();
    expect(await importing).toMatchObject({ imported: 1, failed: [] });
    expect(await countCheckpoints(saver, threadId)).toBe(60);
    expect((await saver.searchThreads()).map((t) => t.threadId)).toEqual([threadId]);
  });
});
