/**
 * The saver on a Spider head over two data nodes against the saver on one MariaDB
 * server: the write path (put + putWrites, concurrent writers) and getTuple of the
 * latest checkpoint. Prints ops/s, medians and the ratios Spider / single server.
 *
 *   bash scripts/with-databases.sh tsx bench/spider.ts
 *   (or with MYSQL_URL, SPIDER_URL and SPIDER_SHARDS of servers already running)
 *
 * Sizes: BENCH_SPIDER_THREADS (default 200), BENCH_SPIDER_STEPS (10),
 * BENCH_SPIDER_WRITERS (8), BENCH_SPIDER_READS (500).
 */

import { randomBytes } from "node:crypto";
import mysql from "mysql2/promise";
import { shipped } from "./shipped.js";
import { formatMs, formatNumber, median, now } from "./stats.js";
import { rng, threadIdOf, writeThreads } from "./workload.js";

const { DrizzleSaver } = shipped;

const THREADS = Number(process.env.BENCH_SPIDER_THREADS ?? 200);
const STEPS = Number(process.env.BENCH_SPIDER_STEPS ?? 10);
const WRITERS = Number(process.env.BENCH_SPIDER_WRITERS ?? 8);
const READS = Number(process.env.BENCH_SPIDER_READS ?? 500);

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run through scripts/with-databases.sh`);
  return value;
}

/** A fresh database of the same name on each server; the URLs pointing at it. */
async function freshDatabase(servers: string[]): Promise<string[]> {
  const name = `bench_${randomBytes(4).toString("hex")}`;
  return Promise.all(
    servers.map(async (server) => {
      const admin = await mysql.createConnection(server);
      await admin.query(`create database ${name} character set utf8mb4`);
      await admin.end();
      const url = new URL(server);
      url.pathname = `/${name}`;
      return url.toString();
    }),
  );
}

interface Result {
  writesPerSecond: number;
  getTupleMs: number;
}

async function measure(saver: InstanceType<typeof DrizzleSaver>): Promise<Result> {
  await saver.setup();
  const threads = Array.from({ length: THREADS }, (_, i) => i);
  let ops = 0;
  const started = now();
  await writeThreads(saver, threads, {
    steps: STEPS,
    writers: WRITERS,
    threadsPerUser: 20,
    ids: new Map(),
    onOp: () => {
      ops += 1;
    },
  });
  const writesPerSecond = ops / ((now() - started) / 1000);
  const random = rng(42);
  const times: number[] = [];
  for (let i = 0; i < READS; i++) {
    const thread = threadIdOf(Math.floor(random() * THREADS));
    const start = now();
    await saver.getTuple({ configurable: { thread_id: thread, checkpoint_ns: "" } });
    times.push(now() - start);
  }
  return { writesPerSecond, getTupleMs: median(times) };
}

const [single] = await freshDatabase([required("MYSQL_URL")]);
const [head, ...shards] = await freshDatabase([required("SPIDER_URL"), ...required("SPIDER_SHARDS").split(",")]);
const results: Record<string, Result> = {};
for (const [name, open] of [
  ["MariaDB, one server", () => DrizzleSaver.fromUrl(single)],
  ["MariaDB Spider, two data nodes", () => DrizzleSaver.fromUrl(head, { spider: { shards } })],
] as const) {
  const saver = await open();
  try {
    results[name] = await measure(saver);
  } finally {
    await saver.close();
  }
}
console.log(`${THREADS} threads x ${STEPS} steps, ${WRITERS} writers; ${READS} getTuple calls`);
for (const [name, result] of Object.entries(results)) {
  console.log(
    `${name.padEnd(32)} put+putWrites ${formatNumber(result.writesPerSecond)} ops/s   getTuple median ${formatMs(result.getTupleMs)}`,
  );
}
const [one, spider] = Object.values(results);
console.log(
  `Spider / one server: writes x${(spider.writesPerSecond / one.writesPerSecond).toFixed(2)}, getTuple time x${(spider.getTupleMs / one.getTupleMs).toFixed(2)}`,
);
