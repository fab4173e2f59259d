import type { DrizzleSaver } from "../../src/index.js";
import { freshSpider, rowsPerShard, shardOf, writeThread } from "./support.js";

// The saver through a Spider head over two data nodes, checked on the data nodes directly.
const TABLES = ["checkpoints", "checkpoint_blobs", "checkpoint_writes"];
let spider: { url: string; shards: string[]; saver: DrizzleSaver };

beforeAll(async () => {
  spider = await freshSpider();
});
afterAll(async () => {
  await spider?.saver.close();
});

/** Rows of a thread per shard, in each of the three tables. */
async function placement(threadId: string): Promise<number[][]> {
  const perTable = await Promise.all(
    TABLES.map((table) =>
      rowsPerShard(spider.shards, `select count(*) as n from ${table} where thread_id = ?`, [threadId]),
    ),
  );
  return spider.shards.map((_, shard) => perTable.map((rows) => Number(rows[shard][0].n)));
}

/** Threads with fixed names whose shards are known: `count` on each shard. */
async function threadsOnBothShards(prefix: string, count: number): Promise<string[][]> {
  const byShard: string[][] = spider.shards.map(() => []);
  for (let i = 0; byShard.some((ids) => ids.length < count); i++) {
    const id = `${prefix}-${i}`;
    const shard = await shardOf(spider.url, id);
    if (byShard[shard].length < count) byShard[shard].push(id);
  }
  return byShard;
}

it("keeps each thread's rows, in all three tables, on exactly the shard the head maps it to", async () => {
  const threads = (await threadsOnBothShards("placed", 3)).flat();
  for (const id of threads) await writeThread(spider.saver, id, 3);
  for (const id of threads) {
    const rows = await placement(id);
    const home = await shardOf(spider.url, id);
    expect(rows[home]).toEqual([3, 6, 1]);
    expect(rows[1 - home]).toEqual([0, 0, 0]);
  }
});

it("merges a cross-thread metadata filter from both shards: newest first, limit and before", async () => {
  const [first, second] = await threadsOnBothShards("filtered", 2);
  const written: { id: string; thread: string; user: string }[] = [];
  for (const [i, thread] of [...first, ...second].entries()) {
    const user = i % 2 === 0 ? "ada" : "bob";
    const ids = await writeThread(spider.saver, thread, 3, (step) => ({ user, run_id: `run-${thread}-${step}` }));
    written.push(...ids.map((id) => ({ id, thread, user })));
  }
  const expected = written
    .filter((row) => row.user === "ada")
    .sort((a, b) => (a.id < b.id ? 1 : -1))
    .map((row) => row.id);
  expect(new Set(written.filter((r) => r.user === "ada").map((r) => r.thread)).size).toBe(2);
  const list = async (options: Parameters<DrizzleSaver["list"]>[1]) => {
    const ids: string[] = [];
    for await (const tuple of spider.saver.list({}, options)) ids.push(tuple.checkpoint.id);
    return ids;
  };
  expect(await list({ filter: { user: "ada" } })).toEqual(expected);
  expect(await list({ filter: { user: "ada", source: "loop" }, limit: 4 })).toEqual(expected.slice(0, 4));
  expect(await list({ filter: { user: "ada" }, before: { configurable: { checkpoint_id: expected[2] } } })).toEqual(
    expected.slice(3),
  );
  const run = written.find((row) => row.user === "bob");
  const byRun = await list({ filter: { run_id: `run-${run?.thread}-1` } });
  expect(byRun).toHaveLength(1);
});

it("copies a thread to a thread on the other shard, and deletes a thread from its shard only", async () => {
  const [[onFirst], [onSecond, keep]] = await threadsOnBothShards("copied", 2);
  await writeThread(spider.saver, onFirst, 4);
  await writeThread(spider.saver, keep, 2);
  await spider.saver.copyThread(onFirst, onSecond);

  const source = await spider.saver.getTuple({ configurable: { thread_id: onFirst } });
  const copy = await spider.saver.getTuple({ configurable: { thread_id: onSecond } });
  expect(copy?.checkpoint).toEqual(source?.checkpoint);
  expect(copy?.pendingWrites).toEqual(source?.pendingWrites);
  expect(await placement(onSecond)).toEqual([
    [0, 0, 0],
    [4, 8, 1],
  ]);

  await spider.saver.deleteThread(onSecond);
  expect(await placement(onSecond)).toEqual([
    [0, 0, 0],
    [0, 0, 0],
  ]);
  expect((await placement(onFirst))[0]).toEqual([4, 8, 1]);
  expect((await placement(keep))[1]).toEqual([2, 4, 1]);
});

it("prunes and expires threads on both shards", async () => {
  const [first, second] = await threadsOnBothShards("retained", 2);
  for (const id of [...first, ...second]) await writeThread(spider.saver, id, 3);

  await spider.saver.prune([first[0], second[0]]);
  // The newest checkpoint stays with its pending write and the blobs it references.
  expect((await placement(first[0]))[0]).toEqual([1, 2, 1]);
  expect((await placement(second[0]))[1]).toEqual([1, 2, 1]);

  // Age one thread on each shard (on the data node: the head only routes): its checkpoints
  // and its per-thread row, which retention reads.
  const old = [first[1], second[1]];
  const past = Date.parse("2020-01-01T00:00:00Z"); // created_at is epoch milliseconds (MySQL migration 0001)
  for (const [shard, id] of old.entries()) {
    await rowsPerShard([spider.shards[shard]], "update checkpoints set created_at = ? where thread_id = ?", [past, id]);
    await rowsPerShard(
      [spider.shards[shard]],
      "update checkpoint_threads set created_at = ?, updated_at = ? where thread_id = ?",
      [past, past, id],
    );
  }
  const expired = await spider.saver.expireThreads({ idleSince: new Date("2021-01-01") });
  expect(expired).toBe(2);
  for (const id of old)
    expect(await placement(id)).toEqual([
      [0, 0, 0],
      [0, 0, 0],
    ]);
  expect((await placement(first[0]))[0]).toEqual([1, 2, 1]);
});

it("pushes a metadata filter down to each node, where it runs on the node's index", async () => {
  const [[first], [second]] = await threadsOnBothShards("indexed", 1);
  for (const id of [first, second])
    await writeThread(spider.saver, id, 2, (step) => ({ run_id: `indexed-${id}-${step}` }));
  const database = new URL(spider.url).pathname.slice(1);
  const logs = async (on: 0 | 1) => rowsPerShard(spider.shards, `set global log_output = 'TABLE', general_log = ${on}`);
  await logs(1);
  const found = [];
  try {
    for await (const tuple of spider.saver.list({}, { filter: { run_id: `indexed-${second}-1` } })) found.push(tuple);
  } finally {
    await logs(0);
  }
  expect(found.map((tuple) => tuple.config.configurable?.thread_id)).toEqual([second]);
  const sent = await rowsPerShard(
    spider.shards,
    "select convert(argument using utf8mb4) as statement from mysql.general_log where command_type = 'Query' and argument like ? and argument like ?",
    [`%\`${database}\`.\`checkpoints\`%`, `%meta_run_id%indexed-${second}-1%`],
  );
  for (const [shard, statements] of sent.entries()) {
    expect(statements.length, `node ${shard}`).toBeGreaterThan(0);
    const [plan] = await rowsPerShard([spider.shards[shard]], `explain ${String(statements[0].statement)}`);
    expect(plan.map((row) => row.key)).toContain("checkpoints_meta_run_id_idx");
  }
});
