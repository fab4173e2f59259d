/**
 * Encryption at rest, its cost: the same saver with and without `encryption`, on SQLite
 * and PostgreSQL, and without the memory of opened values (cacheBytes 0), measured in
 * interleaved rounds (a new seeded random order each round) so load from other jobs falls on all
 * alike. Writes: put + putWrites of the growing-message workload; reads: getTuple of a thread's
 * latest checkpoint.
 *
 *   npm run bench:encryption        # BENCH_ROUNDS (default 8) x BENCH_THREADS (default 20) x 10 steps
 *
 * Prints, per family, the median ratio encrypted / plain and the spread of the rounds'
 * ratios (min..max): the figure in BENCHMARKS.md's encryption section.
 */
import { median } from "./stats.js";
import { oursPostgres, oursSqlite, type Subject, Workspace } from "./subjects.js";
import { shuffledOrders, threadIdOf, writeThread } from "./workload.js";

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

/** Per round, time encrypted / plain for writes and getTuple, for each encrypted subject. */
async function compare(family: string, plain: Subject, encrypted: Subject[]): Promise<void> {
  const subjects = [plain, ...encrypted];
  // A warm-up round each, not counted (JIT, caches, the first statements prepared).
  for (const [i, subject] of subjects.entries()) await round(subject, ROUNDS * 2 + i);
  const writes = encrypted.map((): number[] => []);
  const reads = encrypted.map((): number[] => []);
  const order = shuffledOrders(subjects, 5);
  for (let n = 0; n < ROUNDS; n++) {
    const results = new Map<Subject, Round>();
    for (const subject of order()) results.set(subject, await round(subject, n));
    const p = results.get(plain) as Round;
    for (const [i, subject] of encrypted.entries()) {
      const e = results.get(subject) as Round;
      writes[i].push(e.writeMs / p.writeMs);
      reads[i].push(e.readMs / p.readMs);
    }
    const times = subjects.map((subject) => {
      const r = results.get(subject) as Round;
      return `${subject.name} ${r.writeMs.toFixed(0)}/${r.readMs.toFixed(0)}`;
    });
    process.stderr.write(`${family} round ${n} (writes/getTuple ms): ${times.join(", ")}\n`);
  }
  const range = (r: number[]) => `${Math.min(...r).toFixed(2)}..${Math.max(...r).toFixed(2)}`;
  for (const [i, subject] of encrypted.entries()) {
    console.log(
      `${family}, ${subject.label}: write time encrypted / plain median ${median(writes[i]).toFixed(3)} (rounds ${range(writes[i])}); getTuple time median ${median(reads[i]).toFixed(3)} (rounds ${range(reads[i])}); ${ROUNDS} rounds of ${THREADS} threads x ${STEPS} steps and ${READS} getTuple`,
    );
  }
}

const workspace = new Workspace({ pgUrl: process.env.PG_URL });
try {
  const sqlite = [
    await oursSqlite(workspace),
    await oursSqlite(workspace, true),
    await oursSqlite(workspace, "no-cache"),
  ];
  await compare("SQLite", sqlite[0], sqlite.slice(1));
  for (const subject of sqlite) await subject.close();
  if (process.env.PG_URL) {
    const pg = [
      await oursPostgres(workspace),
      await oursPostgres(workspace, true),
      await oursPostgres(workspace, "no-cache"),
    ];
    await compare("PostgreSQL", pg[0], pg.slice(1));
    for (const subject of pg) await subject.close();
  }
} finally {
  await workspace.drop();
}
