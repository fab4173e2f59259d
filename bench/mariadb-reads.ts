/**
 * MariaDB/MySQL reads as the table grows (issue 14): a cross-thread filter on `user`
 * (a key without a generated column: served by the checkpoint_metadata side table) at
 * a small and a 10x larger table, and `getTuple` of the latest checkpoint against the
 * one by id. Rows are seeded with bulk SQL (MariaDB's seq_0_to_N tables) as copies of
 * one checkpoint written by the saver: 25 checkpoints per thread, 20 threads per user.
 *
 *   npm run build && MYSQL_URL=mysql://user:pass@host:port/db npx tsx bench/mariadb-reads.ts           # 50k, then 500k
 *   npm run build && BENCH_SMALL=1 MYSQL_URL=... npx tsx bench/mariadb-reads.ts                        # 5k, then 50k
 *
 * Targets: the filter at the larger size at most 1.5x its time at the smaller one;
 * getTuple latest no slower than by id. Prints medians in ms (wall clock and Node CPU).
 */
import { randomBytes } from "node:crypto";
import { drizzle } from "drizzle-orm/mysql2";
import mysql from "mysql2/promise";
import { shipped } from "./shipped.js";

const { DrizzleSaver } = shipped;

const SMALL = process.env.BENCH_SMALL === "1";
const SIZES = SMALL ? [5_000, 50_000] : [50_000, 500_000];
const CALLS = SMALL ? 100 : 300;
const PER_THREAD = 25;
const THREADS_PER_USER = 20;
const CHUNK = 50_000;

const base = process.env.MYSQL_URL;
if (!base) throw new Error("MYSQL_URL is not set");

interface Sample {
  wall: number;
  cpu: number;
}

async function measure(run: (i: number) => Promise<unknown>): Promise<Sample> {
  const samples: Sample[] = [];
  for (let i = 0; i < CALLS + 20; i++) {
    const cpu = process.cpuUsage();
    const start = performance.now();
    await run(i);
    const wall = performance.now() - start;
    const used = process.cpuUsage(cpu);
    if (i >= 20) samples.push({ wall, cpu: (used.user + used.system) / 1000 });
  }
  return summarize(samples);
}

async function measurePair(
  a: (i: number) => Promise<unknown>,
  b: (i: number) => Promise<unknown>,
): Promise<[Sample, Sample]> {
  const samples: [Sample[], Sample[]] = [[], []];
  for (let i = 0; i < CALLS + 20; i++) {
    for (const [k, run] of (i % 2 === 0 ? [a, b] : [b, a]).entries()) {
      const which = (i % 2 === 0 ? k : 1 - k) as 0 | 1;
      const cpu = process.cpuUsage();
      const start = performance.now();
      await run(i);
      const wall = performance.now() - start;
      const used = process.cpuUsage(cpu);
      if (i >= 20) samples[which].push({ wall, cpu: (used.user + used.system) / 1000 });
    }
  }
  return [summarize(samples[0]), summarize(samples[1])];
}

function summarize(samples: Sample[]): Sample {
  const median = (values: number[]) => values.sort((x, y) => x - y)[Math.floor(values.length / 2)];
  return { wall: median(samples.map((s) => s.wall)), cpu: median(samples.map((s) => s.cpu)) };
}

const threadOf = (n: number) => `t${String(n).padStart(7, "0")}`;

async function main(): Promise<void> {
  const name = `bench_reads_${randomBytes(4).toString("hex")}`;
  const admin = await mysql.createConnection(base as string);
  await admin.query(`create database ${name}`);
  const url = new URL(base as string);
  url.pathname = `/${name}`;
  const pool = mysql.createPool({ uri: url.toString(), charset: "utf8mb4", connectionLimit: 4 });
  try {
    const saver = new DrizzleSaver(drizzle(pool));
    await saver.setup();
    await saver.put(
      { configurable: { thread_id: "template", checkpoint_ns: "" } },
      {
        v: 4,
        id: "template",
        ts: new Date().toISOString(),
        channel_values: { messages: ["hello", "world"] },
        channel_versions: { messages: "1" },
        versions_seen: {},
      },
      { source: "loop", step: 0, parents: {} },
      { messages: "1" },
    );
    let seeded = 0;
    for (const size of SIZES) {
      for (let from = seeded; from < size; from += CHUNK) {
        const to = Math.min(size, from + CHUNK) - 1;
        await pool.query(
          `insert into checkpoints (thread_id, checkpoint_ns, ns_hash, checkpoint_id, parent_checkpoint_id, checkpoint_type, checkpoint, channel_versions, metadata)
           select concat('t', lpad(s.seq div ${PER_THREAD}, 7, '0')), '', t.ns_hash, concat('c', lpad(s.seq mod ${PER_THREAD}, 4, '0')),
             null, t.checkpoint_type, t.checkpoint, t.channel_versions,
             json_object('parents', json_object(), 'source', 'loop', 'step', cast(s.seq mod ${PER_THREAD} as signed) - 1,
                         'user', concat('u', s.seq div ${PER_THREAD} div ${THREADS_PER_USER}))
           from seq_${from}_to_${to} s join checkpoints t on t.thread_id = 'template'`,
        );
        await pool.query(
          `insert into checkpoint_blobs (thread_id, checkpoint_ns, ns_hash, channel, version, type, \`blob\`)
           select concat('t', lpad(s.seq, 7, '0')), '', b.ns_hash, b.channel, b.version, b.type, b.blob
           from seq_${Math.ceil(from / PER_THREAD)}_to_${Math.floor(to / PER_THREAD)} s
           join checkpoint_blobs b on b.thread_id = 'template'`,
        );
      }
      seeded = size;
      await pool.query("analyze table checkpoints, checkpoint_blobs, checkpoint_metadata");
      const threads = size / PER_THREAD;
      const users = threads / THREADS_PER_USER;
      const filter = await measure(async (i) => {
        const found = [];
        const user = `u${(i * 7919) % users}`;
        for await (const tuple of saver.list({}, { filter: { user, step: 3 }, limit: 5 })) found.push(tuple);
        if (found.length !== 5) throw new Error(`filter on ${user} found ${found.length}`);
      });
      // Interleaved, so that both see the same cache and machine load.
      const [latest, byId] = await measurePair(
        async (i) => {
          const tuple = await saver.getTuple({ configurable: { thread_id: threadOf((i * 7919) % threads) } });
          if (tuple?.checkpoint.channel_values.messages === undefined) throw new Error("no latest checkpoint");
        },
        async (i) => {
          const thread = threadOf((i * 7919) % threads);
          const tuple = await saver.getTuple({ configurable: { thread_id: thread, checkpoint_id: "c0024" } });
          if (!tuple) throw new Error("no checkpoint by id");
        },
      );
      const ms = (s: Sample) => `${s.wall.toFixed(3)} ms (Node CPU ${s.cpu.toFixed(3)} ms)`;
      console.log(`${size} checkpoints: filter { user, step } limit 5: ${ms(filter)}`);
      console.log(`${size} checkpoints: getTuple latest: ${ms(latest)}; by id: ${ms(byId)}`);
    }
  } finally {
    await pool.end();
    await admin.query(`drop database ${name}`);
    await admin.end();
  }
}

await main();
