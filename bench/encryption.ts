/**
 * Encryption at rest, its cost: the same saver with and without `encryption`, on SQLite
 * and PostgreSQL, measured in interleaved rounds (plain, encrypted, encrypted, plain, ...)
 * so load from other jobs falls on both alike. Writes: put + putWrites of the
 * growing-message workload; reads: getTuple of a thread's latest checkpoint.
 *
 *   npm run bench:encryption        # BENCH_ROUNDS (default 8) x BENCH_THREADS (default 20) x 10 steps
 *
 * Prints, per family, the median ratio encrypted / plain and the spread of the rounds'
 * ratios (min..max): the figure in BENCHMARKS.md's encryption section.
 */
import { oursPostgres, oursSqlite, type Subject, Workspace } from "./subjects.js";
import { threadIdOf, writeThread } from "./workload.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
const THREADS = Number(process.env.BENCH_THREADS ?? 20);
const STEPS = 10;
const READS = 200;

interface Round {
  writeMs: number;
  readMs: number;
}

/** One round on a subject: THREADS new threads written, then READS getTuple calls over them. */
async function round(subject: Subject, n: number): Promise<Round> {
  const first = n * THREADS;
  let start = performance.now();
  for (let t = first; t < first + THREADS; t++) await writeThread(subject.saver, t, STEPS, 20, () => {});
  const writeMs = performance.now() - start;
  start = performance.now();
  for (let i = 0; i < READS; i++) {
    await subject.saver.getTuple({ configurable: { thread_id: threadIdOf(first + (i % THREADS)), checkpoint_ns: "" } });
  }
  return { writeMs, readMs: performance.now() - start };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

async function compare(family: string, plain: Subject, encrypted: Subject): Promise<void> {
  // A warm-up round each, not counted (JIT, caches, the first statements prepared).
  await round(plain, ROUNDS * 2);
  await round(encrypted, ROUNDS * 2 + 1);
  const writes: number[] = [];
  const reads: number[] = [];
  for (let n = 0; n < ROUNDS; n++) {
    const order = n % 2 === 0 ? [plain, encrypted] : [encrypted, plain];
    const results = new Map<Subject, Round>();
    for (const subject of order) results.set(subject, await round(subject, n));
    const p = results.get(plain) as Round;
    const e = results.get(encrypted) as Round;
    writes.push(e.writeMs / p.writeMs);
    reads.push(e.readMs / p.readMs);
    process.stderr.write(
      `${family} round ${n}: writes ${p.writeMs.toFixed(0)} / ${e.writeMs.toFixed(0)} ms, getTuple ${p.readMs.toFixed(0)} / ${e.readMs.toFixed(0)} ms (plain / encrypted)\n`,
    );
  }
  const range = (r: number[]) => `${Math.min(...r).toFixed(2)}..${Math.max(...r).toFixed(2)}`;
  console.log(
    `${family}: write time encrypted / plain median ${median(writes).toFixed(3)} (rounds ${range(writes)}); getTuple time median ${median(reads).toFixed(3)} (rounds ${range(reads)}); ${ROUNDS} rounds of ${THREADS} threads x ${STEPS} steps and ${READS} getTuple`,
  );
}

const workspace = new Workspace({ pgUrl: process.env.PG_URL });
try {
  const sqlite = [await oursSqlite(workspace), await oursSqlite(workspace, true)];
  await compare("SQLite", sqlite[0], sqlite[1]);
  for (const subject of sqlite) await subject.close();
  if (process.env.PG_URL) {
    const pg = [await oursPostgres(workspace), await oursPostgres(workspace, true)];
    await compare("PostgreSQL", pg[0], pg[1]);
    for (const subject of pg) await subject.close();
  }
} finally {
  await workspace.drop();
}
