import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import type { RunnableConfig } from "@langchain/core/runnables";
import { type Checkpoint, emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import mysql from "mysql2/promise";
import { DrizzleSaver } from "../../src/index.js";
import { mysqlIdsAsText } from "../helpers/databases.js";

/**
 * The Spider cluster of scripts/spider-cluster.sh: SPIDER_URL (the head) and
 * SPIDER_SHARDS (the data nodes), which scripts/with-databases.sh exports. A missing
 * variable fails the tests rather than skipping them.
 */
export function spiderCluster(): { head: string; shards: string[] } {
  const head = process.env.SPIDER_URL;
  const shards = process.env.SPIDER_SHARDS?.split(",").filter(Boolean);
  if (!head || !shards?.length) {
    throw new Error(
      'SPIDER_URL and SPIDER_SHARDS are not set: run the tests through "npm test" (scripts/with-databases.sh)',
    );
  }
  return { head, shards };
}

function withDatabase(url: string, name: string): string {
  const copy = new URL(url);
  copy.pathname = `/${name}`;
  return copy.toString();
}

/**
 * A database of its own on the head and on every data node (the cluster's, or the
 * given ones), migrated by the saver's Spider setup.
 */
export async function freshSpider(
  nodes: string[] = spiderCluster().shards,
): Promise<{ url: string; shards: string[]; saver: DrizzleSaver }> {
  const cluster = { head: spiderCluster().head, shards: nodes };
  const name = `t_${randomBytes(6).toString("hex")}`;
  for (const server of [cluster.head, ...cluster.shards]) {
    const admin = await mysql.createConnection(server);
    await admin.query(`create database ${name} character set utf8mb4`);
    await admin.end();
  }
  const url = withDatabase(cluster.head, name);
  const shards = cluster.shards.map((shard) => withDatabase(shard, name));
  const saver = await DrizzleSaver.fromUrl(url, { spider: { shards } });
  await saver.setup();
  return { url, shards, saver };
}

/** Rows of a table on each data node directly, not through the head. */
export async function rowsPerShard(
  shards: string[],
  query: string,
  params: unknown[] = [],
): Promise<Record<string, unknown>[][]> {
  return Promise.all(
    shards.map(async (shard) => {
      const connection = await mysql.createConnection({ uri: shard, ...mysqlIdsAsText });
      try {
        const [rows] = await connection.query(query, params);
        return rows as Record<string, unknown>[];
      } finally {
        await connection.end();
      }
    }),
  );
}

/** Stops (kill -9) or restarts a data node of the cluster (scripts/spider-cluster.sh). */
export function dataNode(action: "kill-node" | "start-node", index: number): void {
  execFileSync("bash", ["scripts/spider-cluster.sh", action, String(index)], { stdio: "inherit" });
}

/** The head's partition (p0, p1, ...: the index of the shard) a thread's rows go to. */
export async function shardOf(headUrl: string, threadId: string): Promise<number> {
  const connection = await mysql.createConnection(headUrl);
  try {
    const [rows] = await connection.query("explain partitions select 1 from checkpoints where thread_id = ?", [
      Buffer.from(threadId),
    ]);
    const partitions = String((rows as { partitions: string }[])[0]?.partitions);
    if (!/^p\d+$/.test(partitions)) throw new Error(`thread ${threadId} maps to partitions "${partitions}"`);
    return Number(partitions.slice(1));
  } finally {
    await connection.end();
  }
}

/** A checkpoint history written through the saver: `steps` checkpoints, a pending write on the last. */
export async function writeThread(
  saver: DrizzleSaver,
  threadId: string,
  steps: number,
  metadata: (step: number) => Record<string, unknown> = () => ({}),
): Promise<string[]> {
  let config: RunnableConfig = { configurable: { thread_id: threadId, checkpoint_ns: "" } };
  let version: number | undefined;
  const ids: string[] = [];
  for (let step = 0; step < steps; step++) {
    version = saver.getNextVersion(version);
    const checkpoint: Checkpoint = {
      ...emptyCheckpoint(),
      id: uuid6(step),
      channel_values: { counter: step, [`only_${step}`]: `value ${step}` },
      channel_versions: { counter: version, [`only_${step}`]: version },
    };
    config = await saver.put(
      config,
      checkpoint,
      { source: "loop", step, parents: {}, ...metadata(step) },
      { counter: version, [`only_${step}`]: version },
    );
    ids.push(checkpoint.id);
  }
  await saver.putWrites(config, [["counter", steps]], `task-${threadId}`);
  return ids;
}
