/**
 * Single-insert ceilings: what the same server does with the simplest possible
 * write, measured the way the savers are driven (N concurrent writers over the
 * same Node drivers, each awaiting one single-row INSERT after another). pgbench
 * (a C client) gives the PostgreSQL server's own figure when it is installed.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import mysql from "mysql2/promise";
import postgres from "postgres";
import { now } from "./stats.js";

export interface Ceiling {
  name: string;
  insertsPerSecond: number;
  how: string;
}

const PAYLOAD = "x".repeat(300);
// Bound parameters (pg); client-side escaping (mysql2), as drizzle's mysql2 driver sends queries.
const INSERT_PG = "insert into ceiling (k, v) values ($1, $2)";
const INSERT_MYSQL = "insert into ceiling (k, v) values (?, ?)";

async function loop(writers: number, seconds: number, insert: (worker: number, n: number) => Promise<void>) {
  const deadline = now() + seconds * 1000;
  let total = 0;
  const start = now();
  await Promise.all(
    Array.from({ length: writers }, async (_, worker) => {
      for (let n = 0; now() < deadline; n++) {
        await insert(worker, n);
        total++;
      }
    }),
  );
  return total / ((now() - start) / 1000);
}

/**
 * Two figures: prepared statements (postgres.js's default: after the first call one
 * round trip each), and unnamed ones with `prepare: false`, which is how drizzle's
 * `db.execute` sends every statement (postgres.js then asks the server for the parameter
 * types first: two round trips, and a parse and plan per call).
 */
export async function postgresCeilings(url: string, writers: number, seconds: number): Promise<Ceiling[]> {
  const sql = postgres(url, { max: writers, onnotice: () => {} });
  try {
    await sql`create table if not exists ceiling (id bigserial primary key, k text not null, v text not null)`;
    const result: Ceiling[] = [];
    for (const prepare of [true, false]) {
      const insert = async (worker: number, n: number) => {
        await sql.unsafe(INSERT_PG, [`w${worker}-${n}`, PAYLOAD], { prepare });
      };
      await loop(writers, Math.min(1, seconds), insert); // warm-up: connections, prepared statements
      result.push({
        name: `postgres single insert (postgres.js, ${prepare ? "prepared" : "unprepared, as drizzle sends it"})`,
        insertsPerSecond: await loop(writers, seconds, insert),
        how: `${writers} postgres.js connections, each awaiting one single-row INSERT (300-byte text) after another, prepare: ${prepare}, ${seconds} s`,
      });
    }
    return result;
  } finally {
    await sql.end();
  }
}

function pgbenchPath(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  for (const version of readdirSync(root).sort().reverse()) {
    const path = join(root, version, "bin", "pgbench");
    if (existsSync(path)) return path;
  }
  return undefined;
}

/** pgbench with a one-INSERT script; undefined when pgbench is not installed. */
export async function pgbenchCeiling(url: string, writers: number, seconds: number): Promise<Ceiling | undefined> {
  const pgbench = pgbenchPath();
  if (!pgbench) return undefined;
  const dir = mkdtempSync(join(tmpdir(), "bench-pgbench-"));
  try {
    const script = join(dir, "insert.sql");
    writeFileSync(script, `insert into ceiling (k, v) values ('pgbench-' || :client_id, repeat('x', 300));\n`);
    const output = await new Promise<string>((resolve, reject) => {
      const child = spawn(pgbench, ["-n", "-c", String(writers), "-j", "2", "-T", String(seconds), "-f", script, url], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      let text = "";
      child.stdout.on("data", (chunk: Buffer) => {
        text += chunk.toString();
      });
      child.stderr.on("data", (chunk: Buffer) => {
        text += chunk.toString();
      });
      child.on("error", reject);
      child.on("close", (code) => (code === 0 ? resolve(text) : reject(new Error(`pgbench exited ${code}: ${text}`))));
    });
    const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(output)?.[1];
    if (!tps) throw new Error(`could not read pgbench output: ${output}`);
    return {
      name: "postgres single insert (pgbench)",
      insertsPerSecond: Number(tps),
      how: `pgbench -c ${writers} -j 2 -T ${seconds}, script: one single-row INSERT (300-byte text)`,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function mysqlCeiling(url: string, writers: number, seconds: number): Promise<Ceiling> {
  const pool = mysql.createPool({ uri: url, charset: "utf8mb4", connectionLimit: writers });
  try {
    await pool.query(
      `create table if not exists ceiling (id bigint auto_increment primary key, k varchar(64) not null, v text not null)`,
    );
    await loop(writers, Math.min(1, seconds), async (worker, n) => {
      await pool.query(INSERT_MYSQL, [`w${worker}-${n}`, PAYLOAD]);
    });
    const rate = await loop(writers, seconds, async (worker, n) => {
      await pool.query(INSERT_MYSQL, [`w${worker}-${n}`, PAYLOAD]);
    });
    return {
      name: "mysql single insert (mysql2)",
      insertsPerSecond: rate,
      how: `${writers} mysql2 pool connections, each awaiting one single-row INSERT (300-byte text) after another, ${seconds} s`,
    };
  } finally {
    await pool.end();
  }
}
