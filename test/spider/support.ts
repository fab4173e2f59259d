import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
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

/** A database of its own on the head and on every data node, migrated by the saver's Spider setup. */
export async function freshSpider(): Promise<{ url: string; shards: string[]; saver: DrizzleSaver }> {
  const cluster = spiderCluster();
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
