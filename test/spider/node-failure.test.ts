import type { DrizzleSaver } from "../../src/index.js";
import { dataNode, freshSpider, shardOf, spiderCluster, writeThread } from "./support.js";

// A database over data node 0 and the spare node 2 (scripts/spider-cluster.sh), so
// killing node 2 never disturbs the other Spider tests running at the same time.
const SPARE = 2;
let spider: { url: string; shards: string[]; saver: DrizzleSaver };
const threads: string[] = []; // [on node 0, on the spare node]

beforeAll(async () => {
  dataNode("start-node", SPARE);
  const node0 = spiderCluster().shards[0];
  const spare = new URL(node0);
  spare.port = process.env.SPIDER_NODE2_PORT ?? "23323";
  spider = await freshSpider([node0, spare.toString()]);
  for (let i = 0; threads.length < 2; i++) {
    const id = `failing-${i}`;
    if ((await shardOf(spider.url, id)) === threads.length) threads.push(id);
  }
  for (const id of threads) await writeThread(spider.saver, id, 2);
}, 120_000);

afterAll(async () => {
  await spider?.saver.close();
  dataNode("kill-node", SPARE);
});

const config = (threadId: string) => ({ configurable: { thread_id: threadId } });

/** Rejected with drizzle's query error whose cause is Spider's "Unable to connect to foreign data source: lg_<db>_s1". */
async function expectUnreachable(work: Promise<unknown>): Promise<void> {
  const error = await work.then(
    () => undefined,
    (failure: unknown) => failure,
  );
  const cause = (error as { cause?: { errno?: number; message?: string } } | undefined)?.cause;
  expect(cause?.errno).toBe(1429);
  expect(cause?.message).toMatch(/^Unable to connect to foreign data source: lg_\w+_s1$/);
}

async function retry<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (attempt === 20) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

it("fails the threads of a dead data node with the node's name, keeps the others working, and recovers", async () => {
  const [alive, dead] = threads;
  const before = await spider.saver.getTuple(config(dead));
  dataNode("kill-node", SPARE);

  // The dead node's threads: the head's error (1429) names its link to that node, s1.
  await expectUnreachable(spider.saver.getTuple(config(dead)));
  await expectUnreachable(writeThread(spider.saver, dead, 1));

  // The live node's threads: reads, writes and per-thread lists go on.
  const ids = await writeThread(spider.saver, alive, 2);
  expect((await spider.saver.getTuple(config(alive)))?.checkpoint.id).toBe(ids[1]);
  const history = [];
  for await (const tuple of spider.saver.list(config(alive))) history.push(tuple.checkpoint.id);
  expect(history).toHaveLength(4);

  dataNode("start-node", SPARE);
  const after = await retry(() => spider.saver.getTuple(config(dead)));
  expect(after?.checkpoint).toEqual(before?.checkpoint);
  const more = await writeThread(spider.saver, dead, 1);
  expect((await spider.saver.getTuple(config(dead)))?.checkpoint.id).toBe(more[0]);
}, 120_000);
